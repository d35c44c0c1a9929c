"""Releasing the chat log's far pages, and what sits between messages on them.

Pages far above or below the view are removed (the log keeps ``KEEP`` widgets). A page scrolled
back to is built again from the store; the cards shown between messages (the endpoint set-up card,
``/help``, an error of a command) are not stored, so a released card is set aside under the message
it followed and comes back with that message. The line that marks where the model's window starts
is placed again on whatever page holds that message. Widgets of a reply being written are live:
nothing at or below them is released.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.widget import Widget
from textual.widgets import Static

from tui_agent.ui.gc_tuning import nodes_to_unlink, unlink_removed
from tui_agent.ui.widgets.host import host_of

if TYPE_CHECKING:
    from textual.containers import VerticalScroll

    _Base = VerticalScroll
else:
    _Base = object

PAGE = 20
KEEP = 3 * PAGE  # widgets kept mounted; beyond this, those farthest from the view are released
MARKER_CLASS = "window-marker"
MARKER_TEXT = "··· the model no longer sees the messages above this line ···"


class Card(Protocol):
    """A widget shown between messages that can be built again after its release (NoticeCard...)."""

    def rebuild(self) -> Widget: ...


def message_id_of(widget: Widget) -> int | None:
    found = getattr(widget, "message_id", None)
    if found is None:
        found = getattr(getattr(widget, "block", None), "message_id", None)
    return found if isinstance(found, int) else None


def is_marker(widget: Widget) -> bool:
    return widget.has_class(MARKER_CLASS)


def releasable(widget: Widget) -> bool:
    """A stored message, a card that can be built again, or the window marker: not live."""
    return message_id_of(widget) is not None or hasattr(widget, "rebuild") or is_marker(widget)


class PageReleaseMixin(_Base):
    """For ChatLog: ``oldest_id``/``newest_id``/``has_older``/``has_newer`` describe what is mounted."""

    oldest_id: int | None
    newest_id: int | None
    has_older: bool
    has_newer: bool
    _loading: bool
    _set_aside: dict[int, list[Card]]
    _window_start: int | None
    cursor: Widget | None
    _held_view: tuple[Widget, float, float | None] | None = None  # see hold_view
    _restoring = False

    @property
    def following(self) -> bool:
        raise NotImplementedError

    async def release_far_widgets(self) -> None:
        """Called every second: release what is far above (or below) the view."""
        if self._loading or len(self.children) <= KEEP:
            return
        if self.scroll_y >= self.max_scroll_y / 2:
            await self._release_top()
        else:
            await self._release_bottom()

    def _released_while_scrolling(self) -> None:
        """The pages just released are garbage the collector frees only in a full collection: the
        app runs it once the user stops scrolling for a moment (gc_tuning.IdleCollector)."""
        idle_gc = host_of(self.app).idle_gc
        if idle_gc is not None:
            idle_gc.released()

    async def _release_top(self) -> bool:
        """Release the widgets farthest above the view; True if any were."""
        children = list(self.children)
        excess = len(children) - KEEP
        if excess <= 0:
            return False
        # Cut where the next widget is a stored message, so the page above can be loaded again.
        for cut in range(excess, len(children) - PAGE):
            first_kept = message_id_of(children[cut])
            if first_kept is not None:
                break
        else:
            return False
        # Keep what the user looks at in place: the widget at the top of the view, at the same offset.
        top = next((c for c in children[cut:] if c.virtual_region.bottom > self.scroll_y), children[cut])
        offset = self.scroll_y - top.virtual_region.y
        await self._release(children[:cut])
        self.oldest_id = first_kept
        self.has_older = True
        if not self.following:
            self.hold_view(top, offset)
        return True

    def hold_view(self, top: Widget, offset: float) -> None:
        """Keep ``top`` ``offset`` rows above the top of the view through every layout to come,
        until the user scrolls. The page just mounted or released is laid out at the next refresh,
        or later: while another widget batches the screen's updates (a streaming reply moving its
        blocks) refreshes come with no layout, and a view put back then was put back with the old
        geometry."""
        self._held_view = (top, offset, None)
        self.call_after_refresh(self._restore_view)

    def _restore_view(self, laid_out: bool = False) -> None:
        held = self._held_view
        if held is None:
            return
        top, offset, _ = held
        if not top.is_attached or self.following:
            self._held_view = None
            return
        target = top.virtual_region.y + offset
        if target > self.max_scroll_y and not laid_out:
            # The children are laid out but the log's height is not yet: the scroll would stop at
            # the end, where Textual anchors a view, and it would follow the end again as if the
            # user had not scrolled away. The height comes next (watch_virtual_size); till then the
            # view stays where it is (a page up's scroll toward the place before the page came is
            # stopped), and a scroll of the user's lets it go, as after a view put back.
            target = self.scroll_y
        self._restoring = True
        try:
            self.scroll_to(y=target, animate=False, immediate=True)
        finally:
            self._restoring = False
        if self.following:  # put back at the very end: still where the user scrolled, not following
            self.release_anchor()
        self._held_view = (top, offset, self.scroll_y)

    def watch_virtual_size(self) -> None:
        """A layout changed the height of what is mounted (Textual sets this once the screen's
        layout is done, with every child in its new place): a held view is put back."""
        self._restore_view(laid_out=True)

    def _scrolled(self, new_value: float) -> None:
        """A scroll not made by ``_restore_view`` (the user's, or a clamp): the view is theirs."""
        held = self._held_view
        if held is not None and not self._restoring and held[2] is not None and new_value != held[2]:
            self._held_view = None

    async def _release_bottom(self) -> bool:
        """Release the widgets farthest below the view; True if any were."""
        children = list(self.children)
        excess = len(children) - KEEP
        if excess <= 0 or self.following:
            return False
        for cut in range(len(children) - excess, PAGE, -1):
            last_kept = message_id_of(children[cut - 1])
            if last_kept is not None:
                break
        else:
            return False
        if not all(releasable(child) for child in children[cut:]):
            return False  # a reply being written: it stays at the end, and so does what is above it
        await self._release(children[cut:], after=last_kept)
        self.newest_id = last_kept
        self.has_newer = True
        return True

    async def _release(self, widgets: list[Widget], *, after: int | None = None) -> None:
        """Remove these for good (a page scrolled back to is built anew). Cards are set aside under
        the message they follow (``after``: the one before the first of ``widgets``, if known)."""
        for widget in widgets:
            found = message_id_of(widget)
            if found is not None:
                after = found
            elif hasattr(widget, "rebuild") and after is not None:
                self._set_aside.setdefault(after, []).append(widget)
        if getattr(self, "cursor", None) in widgets:
            self.cursor = None  # the message under the cursor goes: no cursor (its keys leave the footer)
            self.refresh_bindings()
        nodes = nodes_to_unlink(widgets)
        await self.remove_children(widgets)
        unlink_removed(nodes)

    def _with_set_aside(self, widgets: list[Widget]) -> list[Widget]:
        """A page about to be mounted, with the cards that followed its messages built again."""
        if not self._set_aside:
            return widgets
        out: list[Widget] = []
        for widget in widgets:
            out.append(widget)
            found = message_id_of(widget)
            if found is not None:
                out.extend(card.rebuild() for card in self._set_aside.pop(found, []))
        return out

    async def place_window_marker(self) -> None:
        """The marker above the oldest message the model still sees, if that page is mounted (and
        an older message with it: else nothing left out shows here)."""
        first = self._window_start
        children = list(self.children)
        if first is None or any(is_marker(c) for c in children):
            return
        ids = [message_id_of(c) for c in children]
        if not any(i is not None and i < first for i in ids):
            return
        for widget, found in zip(children, ids, strict=True):
            if (found or 0) >= first:
                await self.mount(Static(MARKER_TEXT, classes=MARKER_CLASS), before=widget)
                return
