"""Work-arounds for known Textual bugs, applied once when the app is built (never at import).

Each one checks that the bug is still there before it changes anything, so a Textual release
that fixes it upstream simply turns the work-around off, and says so: ``apply()`` returns (and
``report()`` gives) each fix's name with ``"applied"`` or why not. tests/ui/test_textual_fixes.py
asserts all apply on the pinned Textual; ``bench/textual_upgrade.py`` runs the UI tests against
the newest Textual release in a throwaway venv and prints which still apply.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

log = logging.getLogger("tui_agent.ui")

APPLIED = "applied"
_report: dict[str, str] = {}


def apply() -> dict[str, str]:
    """Apply every work-around still needed (once); each fix's name -> "applied" or why not."""
    if not _report:
        for fix in FIXES:
            try:
                outcome = fix()
            except Exception as exc:  # a reshaped Textual: leave it alone, and say why
                outcome = f"not applied: {type(exc).__name__}: {exc}"
            _report[fix.__name__.lstrip("_")] = outcome
            if outcome != APPLIED:
                log.info("textual work-around %s %s", fix.__name__.lstrip("_"), outcome)
    return dict(_report)


def report() -> dict[str, str]:
    """What ``apply()`` did (empty before it ran)."""
    return dict(_report)


def _unpin_styles_caches() -> str:
    """Textual issue #6665 (https://github.com/Textualize/textual/issues/6665, open):
    ``StylesCache.get_inner_outer`` is an ``lru_cache`` on an *instance* method, so its cache
    keys hold up to 1,024 ``StylesCache`` objects of widgets long removed, each with every
    rendered line of its widget (measured here: RSS grew by ~0.6 MB a turn for the first ~200
    turns of a session). The result depends only on the two colours: cache on those."""
    from textual._styles_cache import StylesCache
    from textual.color import Color
    from textual.style import Style

    current: Any = StylesCache.__dict__.get("get_inner_outer")
    if current is None or not hasattr(current, "cache_clear"):
        return "not applied: StylesCache.get_inner_outer is no longer an lru_cache (fixed upstream?)"

    @lru_cache(1024)
    def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
        return Style(background=base_background + background), Style(background=base_background)

    current.cache_clear()
    StylesCache.get_inner_outer = staticmethod(inner_outer)  # type: ignore[assignment,method-assign]
    log.debug("textual #6665 work-around: StylesCache.get_inner_outer cached by colour")
    return APPLIED


def _layout_refresh_invalidates_box_model() -> str:
    """``Widget.refresh(layout=True)`` bumps ``_layout_updates`` (part of the key of the widget's
    box-model cache) only when no layout was pending yet. A layout of the screen can run in between
    (another widget asked for it) and cache the box model of the content at that moment; a later
    update then keeps that stale height for good. Seen in long sessions: a streamed reply of twenty
    lines stayed one line tall (its first words), its end never on screen. Every layout refresh now
    bumps the counter, so a box model is never reused across a content change.
    Upstream: no issue found (searched 2026-11); tests/ui/test_textual_fixes.py reproduces it."""
    from textual.widget import Widget

    probe = Widget()
    probe._layout_required = True
    before = probe._layout_updates
    probe.refresh(layout=True)
    if probe._layout_updates != before:
        return "not applied: a layout refresh already invalidates the box model (fixed upstream?)"

    original = Widget.refresh

    def refresh(self: Widget, *regions: Any, repaint: bool = True, layout: bool = False, **more: Any) -> Any:
        if layout and self._layout_required:
            self._layout_updates += 1
        return original(self, *regions, repaint=repaint, layout=layout, **more)

    Widget.refresh = refresh  # type: ignore[method-assign]
    log.debug("textual work-around: every layout refresh invalidates the widget's box model")
    return APPLIED


STRIP_CACHES = (
    "_divide_cache",
    "_crop_cache",
    "_style_cache",
    "_filter_cache",
    "_line_length_cache",
    "_crop_extend_cache",
    "_offsets_cache",
)
STRIP_FIELDS = ("_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count")


class _CacheOnFirstUse:
    """A ``Strip`` cache slot that makes its ``FIFOCache`` the first time it is read."""

    __slots__ = ("make", "size", "slot")

    def __init__(self, slot: Any, make: Any, size: int) -> None:
        self.slot = slot
        self.make = make
        self.size = size

    def __get__(self, strip: Any, owner: Any = None) -> Any:
        if strip is None:
            return self
        try:
            return self.slot.__get__(strip, owner)
        except AttributeError:
            cache = self.make(self.size)
            self.slot.__set__(strip, cache)
            return cache

    def __set__(self, strip: Any, value: Any) -> None:
        self.slot.__set__(strip, value)


def _strip_caches_on_first_use() -> str:
    """Every ``Strip`` (a line of a widget, and each piece a line is cut into) built seven
    ``FIFOCache`` objects, each with its own dict, though most strips use one or two of them, if
    any. Those were nine objects in ten that the cycle collector tracked in a long session: every
    full collection walked ~175,000 of them (0.15-0.3 s, every third turn, in the middle of a
    streamed reply). Each cache is now made the first time its strip reads it.
    Upstream: no issue found (searched 2026-11)."""
    from textual.cache import FIFOCache
    from textual.strip import Strip

    if set(getattr(Strip, "__slots__", ())) != set(STRIP_CACHES) | set(STRIP_FIELDS):
        return "not applied: Strip's slots changed (reshaped upstream)"
    probe = Strip([])
    caches = {name: getattr(probe, name) for name in STRIP_CACHES}
    if not all(type(cache) is FIFOCache and not cache for cache in caches.values()):
        return "not applied: Strip's caches are already lazy, or not the FIFOCaches this knows"
    for name, cache in caches.items():
        setattr(Strip, name, _CacheOnFirstUse(Strip.__dict__[name], FIFOCache, cache._maxsize))

    def __init__(self: Strip, segments: Any, cell_length: int | None = None) -> None:
        self._segments = list(segments)
        self._cell_length = cell_length
        self._render_cache = None
        self._link_ids = None
        self._cell_count = None

    Strip.__init__ = __init__  # type: ignore[method-assign]
    log.debug("textual work-around: a strip's caches are made on first use")
    return APPLIED


def _strip_divide_without_cycle() -> str:
    """``Strip.divide`` at the strip's own length returns ``[self]`` and caches it in the strip:
    a reference cycle. The compositor cuts every line of every widget so, and each such line (with
    its segments) then outlived its widget until a full collection: ~2,400 lines for 1,200
    messages scrolled, most of what each full collection had to free. ``[self]`` is not cached now.
    Upstream: no issue found (searched 2026-11)."""
    from textual.strip import Strip

    probe = Strip([], 0)
    probe.divide([0])
    cached = probe._divide_cache.get((0,))
    if not cached or cached[0] is not probe:
        return "not applied: Strip.divide no longer caches the strip in itself (fixed upstream?)"

    original = Strip.divide

    def divide(self: Strip, cuts: Any) -> Any:
        cuts = [cut for cut in cuts if cut <= self.cell_length]
        if cuts == [self.cell_length]:
            return [self]
        return original(self, cuts)

    Strip.divide = divide  # type: ignore[method-assign]
    log.debug("textual work-around: a strip cut at its own length is not cached in itself")
    return APPLIED


def _component_nodes_freed_on_restyle() -> str:
    """Each time a widget with component classes is styled (at mount, and when its classes
    change), Textual makes a virtual node per class and drops the ones made before. A node and its
    ``Styles`` point at each other, so each dropped one was left for a full collection: three per
    reply bubble, about one full collection's worth every few hundred messages scrolled. The
    dropped nodes' links back are now cut, and reference counting frees them at once.
    Upstream: https://github.com/Textualize/textual/pull/6017 (weak ``Styles.node``; closed
    unmerged, the maintainers preferring the cycles cut when a node's life ends, as here)."""
    from textual.css.stylesheet import Stylesheet
    from textual.dom import DOMNode

    from tui_agent.ui.gc_tuning import unlink_styles

    probe = DOMNode()
    original = getattr(Stylesheet, "_process_component_classes", None)
    if original is None or vars(probe).get("_css_styles") is None or probe._css_styles.node is not probe:
        return "not applied: no Stylesheet._process_component_classes, or styles no longer point at their node"

    def process_component_classes(self: Stylesheet, node: Any) -> None:
        before = [styles.node for styles in node._component_styles.values()]
        original(self, node)
        if not before:
            return
        kept = {id(styles.node) for styles in node._component_styles.values()}
        for virtual in before:
            if virtual is not None and id(virtual) not in kept:
                unlink_styles(virtual)

    Stylesheet._process_component_classes = process_component_classes  # type: ignore[method-assign]
    log.debug("textual work-around: virtual nodes of component classes freed when replaced")
    return APPLIED


def _arrangement_without_cycle() -> str:
    """``Compositor._arrange_root`` places widgets with a nested function that calls itself: a
    reference cycle holding the map and the set of widgets it returns. The compositor keeps them
    until the next arrangement; by then the cycle is often old (a collection ran meanwhile), and it
    kept every widget of that map alive, released ones too, until a full collection. The map and
    set handed back are now copies, and the ones the cycle holds are emptied.
    Upstream: no issue found (searched 2026-11)."""
    from textual._compositor import Compositor

    original = Compositor._arrange_root
    code = getattr(original, "__code__", None)
    if code is None or "add_widget" not in code.co_cellvars:
        return "not applied: Compositor._arrange_root no longer places widgets with a nested recursive function"

    def arrange_root(self: Compositor, root: Any, size: Any, visible_only: bool = True) -> Any:
        placed, widgets = original(self, root, size, visible_only)
        copies = dict(placed), set(widgets)
        placed.clear()
        widgets.clear()
        return copies

    Compositor._arrange_root = arrange_root  # type: ignore[method-assign]
    log.debug("textual work-around: an arrangement does not keep its widgets in a cycle")
    return APPLIED


FIXES = (
    _unpin_styles_caches,
    _layout_refresh_invalidates_box_model,
    _strip_caches_on_first_use,
    _strip_divide_without_cycle,
    _component_nodes_freed_on_restyle,
    _arrangement_without_cycle,
)
