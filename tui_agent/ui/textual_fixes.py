"""Work-arounds for known Textual bugs, applied once when the app is built (never at import).

Each one checks that the bug is still there before it changes anything, so a Textual release
that fixes it upstream simply turns the work-around off.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

log = logging.getLogger("tui_agent.ui")

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    _unpin_styles_caches()
    _layout_refresh_invalidates_box_model()


def _unpin_styles_caches() -> None:
    """Textual issue #6665: ``StylesCache.get_inner_outer`` is an ``lru_cache`` on an *instance*
    method, so its cache keys hold up to 1,024 ``StylesCache`` objects of widgets long removed,
    each with every rendered line of its widget (measured here: RSS grew by ~0.6 MB a turn for
    the first ~200 turns of a session). The result depends only on the two colours: cache on those."""
    from textual._styles_cache import StylesCache
    from textual.color import Color
    from textual.style import Style

    current: Any = StylesCache.__dict__.get("get_inner_outer")
    if current is None or not hasattr(current, "cache_clear"):
        return  # fixed upstream (or reshaped): leave it alone

    @lru_cache(1024)
    def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
        return Style(background=base_background + background), Style(background=base_background)

    current.cache_clear()
    StylesCache.get_inner_outer = staticmethod(inner_outer)  # type: ignore[assignment,method-assign]
    log.debug("textual #6665 work-around: StylesCache.get_inner_outer cached by colour")


def _layout_refresh_invalidates_box_model() -> None:
    """``Widget.refresh(layout=True)`` bumps ``_layout_updates`` (part of the key of the widget's
    box-model cache) only when no layout was pending yet. A layout of the screen can run in between
    (another widget asked for it) and cache the box model of the content at that moment; a later
    update then keeps that stale height for good. Seen in long sessions: a streamed reply of twenty
    lines stayed one line tall (its first words), its end never on screen. Every layout refresh now
    bumps the counter, so a box model is never reused across a content change."""
    from textual.widget import Widget

    probe = Widget()
    probe._layout_required = True
    before = probe._layout_updates
    probe.refresh(layout=True)
    if probe._layout_updates != before:
        return  # fixed upstream: leave it alone

    original = Widget.refresh

    def refresh(self: Widget, *regions: Any, repaint: bool = True, layout: bool = False, **more: Any) -> Any:
        if layout and self._layout_required:
            self._layout_updates += 1
        return original(self, *regions, repaint=repaint, layout=layout, **more)

    Widget.refresh = refresh  # type: ignore[method-assign]
    log.debug("textual work-around: every layout refresh invalidates the widget's box model")
