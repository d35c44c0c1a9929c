"""The cycle collector and a long-running TUI.

A full collection scans every tracked object. After start-up most of them (modules, classes,
functions, the openai types) live as long as the process, yet each scan walks them again:
opening a conversation spent about a third of its time in the collector (0.11 of 0.30 s
in-process). ``gc.freeze()`` moves what is alive now out of the collector's sight; reference
counting still frees them, only cycles among frozen objects are never collected.

What touches the collector (``pause``, ``freeze_long_lived``, ``IdleCollector``) was measured on
CPython 3.11-3.13's generational collector (three generations, full collections counted in
``gc.get_count()[2]``), and does nothing on any other (3.14's incremental collector gives the
thresholds and counts other meanings; PyPy has its own): ``measured_collector()``. Cutting
reference cycles (``unlink_*``) helps any collector and stays on.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("tui_agent.ui")

ENV = "TUI_AGENT_GC_FREEZE"
PAUSE_ENV = "TUI_AGENT_GC_STARTUP"

MEASURED = ((3, 11), (3, 13))  # CPython versions whose collector this was measured on


def measured_collector() -> bool:
    """CPython 3.11-3.13's generational collector: the one the tuning here was measured on."""
    if sys.implementation.name != "cpython":
        return False
    if not MEASURED[0] <= tuple(sys.version_info[:2]) <= MEASURED[1]:
        return False
    return len(gc.get_threshold()) == 3 and len(gc.get_count()) == 3


STARTUP = "start-up"
WARM_UP = "warm-up"
_pause_lock = threading.Lock()


class _Nested:
    """A change to the collector that the first owner makes and the last one to end undoes:
    ``change()`` returns what ``undo`` puts back."""

    def __init__(self, change: Callable[[], Any], undo: Callable[[Any], None]) -> None:
        self.owners: set[str] = set()
        self.saved: Any = None
        self._change, self._undo = change, undo

    def add(self, owner: str) -> None:
        with _pause_lock:
            if not self.owners:
                self.saved = self._change()
            self.owners.add(owner)

    def discard(self, owner: str) -> None:
        """``owner``'s part is over (nothing if it had none)."""
        with _pause_lock:
            if owner not in self.owners:
                return
            self.owners.discard(owner)
            if not self.owners:
                self._undo(self.saved)
                self.saved = None


def _disable() -> bool:
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def _enable_if(was_enabled: bool) -> None:
    if was_enabled:
        gc.enable()


_paused = _Nested(_disable, _enable_if)
_pauses = _paused.owners


def pause(owner: str) -> None:
    """Stop the automatic collections until every owner that paused them resumes.

    Start-up (imports, the first frame) and the warm-up's imports build objects that live as long
    as the process: the young collections run while they are built (about a hundred before the
    first frame, a tenth of its time here, more on a busy host: each walks memory the cache no
    longer holds) find nothing to free. Reference counting frees everything else meanwhile.
    """
    if measured_collector():
        _paused.add(owner)


def resume(owner: str) -> None:
    """``owner``'s pause is over (nothing if it had none); the last one puts the collector back."""
    _paused.discard(owner)


def pause_startup() -> None:
    """Until the first frame is drawn (``TUI_AGENT_GC_STARTUP=0`` turns it off, for A/B runs)."""
    if os.environ.get(PAUSE_ENV, "1") != "0":
        pause(STARTUP)


def freeze_long_lived() -> None:
    """Freeze every object alive now (``TUI_AGENT_GC_FREEZE=0`` turns it off, for A/B runs)."""
    if os.environ.get(ENV, "1") != "0" and measured_collector():
        gc.freeze()


IDLE_ENV = "TUI_AGENT_GC_IDLE"
IDLE_S = 0.6  # this long without a reply running or a key typed: the user is reading
EARLY = 4  # collect once the automatic full collection is this many gen-1 collections away
HOLD = 10  # while the user types during a reply, the collector's own full collection waits this many times longer
HOLD_CHECK_S = 0.25  # how often a hold looks for a pause in the typing
BEHIND_KEY_S = 0.05  # a held collection near its bound runs this long after a key (its echo written out first)


def _hold() -> tuple[int, ...]:
    threshold = gc.get_threshold()
    young, middle, full = threshold
    gc.set_threshold(young, middle, full * HOLD)
    return threshold


def _set_threshold(threshold: tuple[int, ...]) -> None:
    gc.set_threshold(*threshold)


_held = _Nested(_hold, _set_threshold)
_held_by = _held.owners


def hold_full(owner: str) -> None:
    """Put the collector's own full collections ``HOLD`` times further apart until every owner that
    held them releases (the young collections run as before)."""
    if measured_collector():
        _held.add(owner)


def unheld_threshold() -> tuple[int, ...]:
    """The collector's thresholds as they are when nothing holds its full collections."""
    with _pause_lock:
        saved = _held.saved
        return saved if saved is not None else gc.get_threshold()


def release_full(owner: str) -> None:
    """``owner``'s hold is over (nothing if it had none); the last one puts the thresholds back."""
    _held.discard(owner)


class IdleCollector:
    """Runs the full collection when the app is idle, before the collector would run it itself.

    A full collection walks every tracked object (0.1-0.2 s late in a long session). Left to
    itself, the collector runs one every ~8 turns, wherever it happens to be: mostly in the middle
    of a streamed reply, which stutters, or under the user's keystrokes. After each reply, once
    nothing streams and nothing is typed for ``IDLE_S``, this runs it if the collector's own is
    near (its gen-1 count within ``EARLY`` of the threshold); that also resets what the collector
    counts towards its next one. Its own stays on for what this misses (one very long reply).

    Scrolling far releases pages of widgets; their reference cycles (a widget and its styles,
    caches, component nodes) are garbage only a full collection frees, and while the user scrolled
    the collector's own came due every ~20 PageUps, with ~200 messages' worth at once (40,000
    objects: 0.1-0.2 s with the screen stopped). Once scrolling that released a page pauses for
    ``IDLE_S``, this runs it whether or not it is near.
    Typing during a long reply: the collector's own full collection came due every ~2 s of an
    8,000-token reply streamed at 400 tokens a second, each walking the reply's widgets (80-240 ms,
    growing with the reply), and a key typed meanwhile waited for it: most of the slow echoes. From
    the first key typed while a reply runs until the input pauses for ``IDLE_S`` (seen within
    ``HOLD_CHECK_S``), the collector's count for a full collection must reach ``HOLD`` times its
    threshold (``hold_full``). Then the threshold is back: the collection held back runs in the
    pause if the collector's own rules call for it (its count, and its 25 % rule of new long-lived
    objects), or between replies. The young collections, which free most cycles, run as before;
    what waits is bounded by ``HOLD``: within ``EARLY`` of it, the app runs the collection itself
    right behind a key (``BEHIND_KEY_S`` after it), not under the next one.

    ``TUI_AGENT_GC_IDLE=0`` turns this off, for A/B runs.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.enabled = os.environ.get(IDLE_ENV, "1") != "0" and measured_collector()
        self.last_input = 0.0
        self.collections = 0
        self._timer: Any = None
        self._released = False  # pages were released by scrolling since the last full collection
        self._hold_timer: Any = None  # while full collections are held for the user's typing
        self._behind_key: Any = None  # the held collection, set to run right behind a key
        self._owner = f"typing-{id(self)}"

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def typed(self) -> None:
        """A key that edits in the composer (a letter, Backspace, an arrow; not a send, a scroll
        or a shortcut)."""
        self.input_seen()
        if not self.enabled:
            return
        if self._hold_timer is None:
            if self.app.turns:
                hold_full(self._owner)
                try:
                    self._hold_timer = self.app.set_interval(HOLD_CHECK_S, self._check_hold)
                except Exception:
                    release_full(self._owner)
                    raise
        elif self._behind_key is None and gc.get_count()[2] >= gc.get_threshold()[2] - EARLY:
            # The held collection is near its bound: run it right behind this key (once its echo is
            # out), not under a later one.
            self._behind_key = self.app.set_timer(BEHIND_KEY_S, self._collect_behind_key)

    def _collect_behind_key(self) -> None:
        self._behind_key = None
        # Still near: the collector's own may have run in between (its count is then back at 0).
        if self.holding and gc.isenabled() and gc.get_count()[2] >= gc.get_threshold()[2] - EARLY:
            self._collect("held")

    @property
    def holding(self) -> bool:
        return self._hold_timer is not None

    def _check_hold(self) -> None:
        if time.monotonic() - self.last_input < IDLE_S:
            return  # still typing (in the reply or right after it)
        # The thresholds back: the collection held back runs at the collector's next young one if
        # its own rules call for it (in the pause), or between replies by _maybe_collect.
        self.end_hold()

    def end_hold(self) -> None:
        """The thresholds back (the typing paused, or the app ends)."""
        for timer in (self._hold_timer, self._behind_key):
            if timer is not None:
                timer.stop()
        self._hold_timer = self._behind_key = None
        release_full(self._owner)  # also if the timer never started

    def turn_ended(self) -> None:
        if self.enabled:
            self._schedule(IDLE_S)

    def released(self) -> None:
        """Scrolling released a page: collect once it pauses."""
        if self.enabled:
            self._released = True
            self._schedule(IDLE_S)

    def _schedule(self, delay: float) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(delay, self._maybe_collect)

    def _maybe_collect(self) -> None:
        self._timer = None
        if self.app.turns:  # a reply streams again: its end schedules the next check
            return
        quiet = time.monotonic() - self.last_input
        if quiet < IDLE_S:  # typing: wait for a pause
            self._schedule(IDLE_S - quiet)
            return
        self.end_hold()  # quiet: a hold this check came before is over too
        near = gc.get_count()[2] >= unheld_threshold()[2] - EARLY
        if not gc.isenabled() or not (near or self._released):
            return  # switched off (the warm-up does, while it imports), or not due yet
        self._collect("idle")

    def _collect(self, why: str) -> None:
        started = time.perf_counter()
        found = gc.collect()
        self._released = False
        self.collections += 1
        log.debug("%s full collection: %d unreachable, %.0f ms", why, found, (time.perf_counter() - started) * 1000)


UNLINK_ENV = "TUI_AGENT_GC_UNLINK"


def nodes_to_unlink(widgets: list[Any]) -> list[Any]:
    """``widgets``, their descendants and the virtual nodes that style their component classes
    (taken before removal: Textual forgets the virtual nodes when it removes a widget)."""
    if os.environ.get(UNLINK_ENV, "1") == "0":
        return []
    nodes = [node for widget in widgets for node in widget.walk_children(with_self=True)]
    for node in list(nodes):
        for styles in getattr(node, "_component_styles", {}).values():
            virtual = styles.node  # a weak reference in RenderStyles
            if virtual is not None:
                nodes.append(virtual)
    return nodes


def unlink_removed(nodes: list[Any]) -> None:
    """Break the reference cycles of nodes removed for good (``nodes_to_unlink``), so that reference
    counting frees them (once Textual's layout caches let go of them) instead of the next full
    collection.

    A widget and its two ``Styles`` point at each other (``Styles.node``), so does each virtual
    node Textual makes to style a component class; a widget's LRU caches are rings of linked lists.
    Released by scrolling, ~200 messages' worth of these came due in one full collection under the
    user's PageUps. ``Styles`` is made for ``node=None`` (a style with no node refreshes nothing).
    Only for widgets that are never mounted again (the chat log's released pages).
    ``TUI_AGENT_GC_UNLINK=0`` turns it off, for A/B runs.
    """
    for node in nodes:
        unlink_styles(node)
        state = vars(node)
        for key in ("_box_model_cache", "_query_one_cache"):
            cache = state.get(key)
            entries = getattr(cache, "_cache", None)
            if isinstance(entries, dict):
                for entry in entries.values():
                    if isinstance(entry, list):
                        entry.clear()  # [prev, next, key, value]: the ring's links
                cache.clear()


def unlink_styles(node: Any) -> None:
    """Cut a DOM node's ``Styles`` links back to it (each ``Styles.node``): the cycle a Textual
    node always makes with its styles. Only for a node that is gone for good."""
    for key in ("_css_styles", "_inline_styles"):
        styles = vars(node).get(key)
        if styles is not None and getattr(styles, "node", None) is node:
            styles.node = None
