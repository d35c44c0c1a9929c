"""The chat log: a window of pages over the conversation. It opens on the newest page; older pages
load on scroll-up and newer ones on scroll-down, and pages far from the view are released
(so a long sitting or a scroll through thousands of messages keeps the DOM small)."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.containers import VerticalScroll
from textual.widget import Widget

from tui_agent.core.store import pages, worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.store.models import Message
from tui_agent.core.store.pages import Page
from tui_agent.core.vault import Vault
from tui_agent.ui.store_calls import read_or_say
from tui_agent.ui.widgets import message_widgets
from tui_agent.ui.widgets.host import host_of
from tui_agent.ui.widgets.log_release import KEEP, PAGE, Card, PageReleaseMixin, is_marker, message_id_of
from tui_agent.ui.widgets.log_sizing import rows_filling
from tui_agent.ui.widgets.message_cursor import CURSOR_BINDINGS, MessageCursorMixin
from tui_agent.ui.widgets.own_styles import OwnFocusStyles

if TYPE_CHECKING:
    from textual.timer import Timer

PREFETCH_AFTER_S = 0.5  # after opening a conversation, the rest of its newest page loads this much later
WINDOW_AFTER_S = 0.3  # and where the model's window starts is found this much later (not on the first paint)


__all__ = ["KEEP", "PAGE", "ChatLog", "message_id_of"]


class ChatLog(OwnFocusStyles, PageReleaseMixin, MessageCursorMixin, VerticalScroll):
    """Anchored to the bottom unless the user scrolled away; focused, it has a message cursor
    (message_cursor) and restyles itself alone (own_styles); it shows the active branch."""

    BINDINGS = CURSOR_BINDINGS

    def __init__(self, vault: Vault, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.vault = vault
        self.conversation_id: int | None = None
        self.oldest_id: int | None = None
        self.has_older = False
        self.newest_id: int | None = None  # set while newer messages are released below the view
        self.has_newer = False
        self._loading = False
        self._settling = False  # True while a page is being laid out: scroll moves are not the user's
        self._prefetch: Timer | None = None  # loads the page above, half a second after the first paint
        self._prefetch_plan = 0  # which planned load may run: a timer's call, once due, is queued
        self._set_aside: dict[int, list[Card]] = {}  # released cards, under the message they follow
        self._window_start: int | None = None  # the oldest message the model sees, if it does not see all

    @property
    def following(self) -> bool:
        """True while the view sticks to the end (the user has not scrolled away)."""
        return self.is_anchored and not self._anchor_released

    def on_mount(self) -> None:
        self.anchor()
        self.set_interval(1.0, self.release_far_widgets)

    def scroll_end(self, *args: Any, **kwargs: Any) -> None:
        """Textual's scroll to the end anchors the view again; while newer pages are released below
        the end of what is mounted is not the end: the anchor stays released (else the next layout
        moves the view to the bottom without a scroll event, and nothing asks for the next page),
        and the page below loads once the view is there."""
        super().scroll_end(*args, **kwargs)
        if self.has_newer:
            self._anchor_released = True
            self.call_after_refresh(self._fill_view)

    def follow(self) -> None:
        """Back to the end and following it again (a message was sent): where the user had moved
        the view (the message cursor, a page up) no longer holds it."""
        self._held_view = None
        self.anchor()

    async def go_to_end(self) -> None:
        """End: the conversation's newest message at the bottom, followed (after a jump or a long
        scroll up, the newest page is loaded first)."""
        if self.has_newer and self.conversation_id is not None:
            await self.show_conversation(self.conversation_id)
        self.follow()

    async def action_scroll_end(self) -> None:  # type: ignore[override]  # Textual awaits async actions
        await self.go_to_end()

    async def action_page_down(self) -> None:  # type: ignore[override]
        """A page down; the last one reaches the end and follows it again (a page down at the end
        must not let go of it)."""
        if not self.has_newer and self.scroll_y + self.scrollable_content_region.height >= self.max_scroll_y:
            await self.go_to_end()
        else:
            self.scroll_page_down()
            if self.has_newer:
                self.call_after_refresh(self._fill_view)  # at the end of what is mounted: the page below

    def widget_for(self, message: Message, images: list[str], alternatives: list[int] | None = None) -> Widget | None:
        return message_widgets.widget_for(self.vault.root, message, images, alternatives)

    def tool_widget(self, name: str, arguments: str, output: str, paths: list[Path], message_id: int | None) -> Widget:
        return message_widgets.tool_widget(self.vault.root, name, arguments, output, paths, message_id)

    def _widgets(self, page: Page) -> list[Widget]:
        widgets = []
        for message in page.rows:
            widget = self.widget_for(message, page.attachments.get(message.id, []), page.alternatives.get(message.id))
            if widget is not None:
                widgets.append(widget)
        return self._with_set_aside(widgets)

    async def show_conversation(self, conversation_id: int | None, *, until_id: int | None = None) -> None:
        """Replace the log with the newest page (or the page ending at ``until_id``), read on the
        store's thread (the screen keeps drawing meanwhile)."""
        page = None
        if conversation_id is not None:
            page = await read_or_say(self, pages.newest, conversation_id, PAGE, until_id=until_id)
            if page is None:
                return  # the store failed (said so): the log stays as it was
        await self.show_page(conversation_id, page, until_id=until_id)

    async def show_page(self, conversation_id: int | None, page: Page | None, *, until_id: int | None = None) -> None:
        """Replace the log with ``page`` (read by :func:`pages.newest`) of ``conversation_id``."""
        self._cancel_prefetch()  # the page above the one shown before: not wanted now
        self.conversation_id = conversation_id
        self._settling = True  # emptying the log moves the view to the top: that is not the user scrolling
        self.oldest_id = None
        self.has_older = False
        self.newest_id = None
        self.has_newer = False
        self._window_start = None
        self._held_view = None
        await self._release(list(self.children))
        self._set_aside.clear()
        if conversation_id is None or page is None:
            self.call_after_refresh(self._settled)  # else a conversation begun here never loaded on scroll
            return
        rows = page.rows
        more = page.more
        if until_id is None and rows:
            # The first paint needs only what fills the view; the rest of the page follows right after.
            kept = rows[-self._rows_filling_the_view(rows) :]
            more = more or len(kept) < len(rows)
            rows = kept
        if rows:
            self.oldest_id = rows[0].id
            self.has_older = more
            if page.newer_after:
                self.newest_id = rows[-1].id
                self.has_newer = True
        self._settling = True
        page.rows = rows
        await self.mount_all(self._widgets(page))
        self.anchor()
        self.call_after_refresh(self._settled)

    async def show_message(self, message_id: int, *, offset: float | None = None, cursor: bool = False) -> None:
        """The page holding ``message_id`` (another alternative or branch was chosen there): the
        message at ``offset`` lines from the top of the view (where the one it replaces was), else
        just in view; with the message cursor on it if ``cursor``."""
        if self.conversation_id is None:
            return
        shown = self.conversation_id
        page = await read_or_say(self, pages.around, shown, message_id, PAGE)  # half above it, half below
        if page is None or shown != self.conversation_id:
            return  # another conversation was opened meanwhile
        await self.show_page(shown, page, until_id=page.rows[-1].id if page.rows else message_id)
        await self.load_newer()  # short messages: the page below too, so that the view can be placed
        widget = next((w for w in self.selectable() if message_id_of(w) == message_id), None)
        if widget is None:
            return
        if cursor:
            self.focus()
            self.move_cursor_to(widget, scroll=False)
        self.call_after_refresh(self._place, widget, offset)

    def _place(self, widget: Widget, offset: float | None) -> None:
        if not widget.is_attached:
            return
        if offset is None:
            self.scroll_to_widget(widget, animate=False, immediate=True)
        else:
            self.scroll_to(y=widget.virtual_region.y - offset, animate=False, immediate=True)

    async def refresh_messages(self, ids: set[int]) -> None:
        """Messages changed in the store (a memory_sql UPDATE): those on screen are built again."""
        page = await read_or_say(self, pages.messages, ids)
        if page is None:
            return
        for old in [child for child in self.children if message_id_of(child) in ids]:
            one = [m for m in page.rows if m.id == message_id_of(old)]
            new = self._widgets(Page(one, page.attachments, page.alternatives)) if one else []
            if new:
                await self.mount_all(new, before=old)
            if self.cursor is old:
                self.move_cursor_to(new[0] if new else None, scroll=False)
            await self._release([old])

    def _rows_filling_the_view(self, rows: list[Message]) -> int:
        """How many of the newest ``rows`` surely fill the view (see log_sizing)."""
        width = max(20, self.size.width or self.app.size.width)
        # Before the first layout the log's size is unknown: the screen's height, less the header,
        # the status line, the composer and the footer, bounds it.
        wanted = self.size.height + 2 if self.size.height else self.app.size.height - 5
        return rows_filling(rows, width, wanted)

    def _settled(self) -> None:
        self._settling = False
        self._fill_view()
        if self._window_start is None and self.conversation_id is not None:
            # Older messages the next request would leave out are marked before any request is made.
            self.set_timer(WINDOW_AFTER_S, self._find_window_start)
        if self.has_older and self.following:
            # One page above the view, loaded once the first paint is out: scrolling up finds it there.
            # One planned load at a time (opened twice in a row, both openings get here).
            self._cancel_prefetch()
            self._prefetch = self.set_timer(PREFETCH_AFTER_S, partial(self._prefetch_due, self._prefetch_plan))

    async def _find_window_start(self) -> None:
        from tui_agent.ui.context_window import window_start

        shown = self.conversation_id
        if shown is None or self._window_start is not None:
            return
        try:
            first = await worker.run(window_start, self.vault, shown)
        except STORE_FAILURES:  # the store away: the marker comes with the next turn (ContextBuilt)
            return
        if first is not None and shown == self.conversation_id and self._window_start is None:
            await self.mark_window_start(first)

    def _cancel_prefetch(self) -> None:
        self._prefetch_plan += 1  # a call the timer queued before it was stopped does nothing
        if self._prefetch is not None:
            self._prefetch.stop()
            self._prefetch = None

    def _prefetch_due(self, plan: int) -> None:
        if plan == self._prefetch_plan:
            self._prefetch_older()

    def _prefetch_older(self) -> None:
        if self.has_older and self.following and not self._loading and len(self.children) < PAGE:
            self.run_worker(self.load_older(), group="older")

    def _fill_view(self) -> None:
        """While the view sits at the end of what is mounted (the pages do not fill it, or the user
        reached the end while a page was loading) scrolling cannot ask for more: load it now."""
        if self._loading or self._settling:
            return
        if self.has_newer and (self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y):
            self.run_worker(self.load_newer(), group="newer")  # never cancelled mid-mount: no gaps

    async def loads_done(self) -> None:
        """Until the page being loaded (read on the store's thread, then mounted) is in."""
        while self._loading:
            await asyncio.sleep(0.01)

    async def load_older(self) -> int:
        """Prepend the previous page; keep the view where it was. Returns how many rows loaded."""
        if self._loading or not self.has_older or self.conversation_id is None:
            return 0
        self._loading = True
        try:
            shown = self.conversation_id
            page = await read_or_say(self, pages.older, shown, self.oldest_id, PAGE)
            if page is None or shown != self.conversation_id:
                return 0  # another conversation was opened meanwhile
            rows = page.rows
            self.has_older = page.more
            if not rows:
                return 0
            self.oldest_id = rows[0].id
            widgets = self._widgets(page)
            first = self.children[0] if self.children else None
            if widgets:
                if first is not None:
                    # Keep what the user looks at in place (a view that follows the end stays there).
                    offset = self.scroll_y - first.virtual_region.y
                    await self.mount_all(widgets, before=first)
                    if not self.following:
                        self.hold_view(first, offset)
                else:
                    await self.mount_all(widgets)
                await self.place_window_marker()
            if await self._release_bottom():
                self._released_while_scrolling()
            return len(rows)
        finally:
            self._loading = False
            if not self.following:
                # A scroll to the top while this page was read (on the store's thread) found a load
                # under way and asked for nothing: still at the top once it is in, the next comes.
                self.call_after_refresh(self._still_at_top)

    def _still_at_top(self) -> None:
        if self.scroll_y <= 0:  # at the very top only: a scroll there cannot move to ask again
            self._want_older()

    def scroll_page_up(self, *args: Any, **kwargs: Any) -> None:
        """A page up (PageUp from the composer or here). Near the top of what is mounted the page
        above is asked for here too: a load that was skipped while another page was loading left
        the view at the top, where a scroll that moves nothing reports no change to answer."""
        self._want_older()
        super().scroll_page_up(*args, **kwargs)

    def on_mouse_scroll_up(self) -> None:
        self._want_older()  # the wheel at the top, likewise

    def _want_older(self) -> None:
        if self.has_older and not self._loading and not self._settling and self.scroll_y <= self.size.height:
            self.run_worker(self.load_older(), group="older")  # one load at a time, never cancelled

    def on_mouse_scroll_down(self) -> None:
        # At the end of what is mounted the scroll position cannot change: the wheel still asks for more.
        if self.has_newer and not self._settling and self.scroll_y >= self.max_scroll_y:
            self.run_worker(self.load_newer(), group="newer")  # never cancelled mid-mount: no gaps

    async def mark_window_start(self, first_message_id: int | None) -> None:
        """A quiet line above the oldest message the model still sees (None: it sees everything)."""
        self._window_start = first_message_id
        for marker in [child for child in self.children if is_marker(child)]:
            await marker.remove()
        await self.place_window_marker()

    async def load_newer(self) -> int:
        """Append the next page after the newest one mounted (after scrolling up, or a jump)."""
        if self._loading or not self.has_newer or self.newest_id is None or self.conversation_id is None:
            return 0
        self._loading = True
        try:
            shown = self.conversation_id
            page = await read_or_say(self, pages.newer, shown, self.newest_id, PAGE)  # on the active branch
            if page is None or shown != self.conversation_id:
                return 0  # another conversation was opened meanwhile
            rows = page.rows
            self.has_newer = page.more
            if not self.has_newer:
                self.newest_id = None
            elif rows:
                self.newest_id = rows[-1].id
            await self.mount_all(self._widgets(page))
            await self.place_window_marker()
            if await self._release_top():
                self._released_while_scrolling()
            self.call_after_refresh(self._fill_view)
            return len(rows)
        finally:
            self._loading = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._scrolled(new_value)
        if self.has_newer and self.is_anchored:
            self._anchor_released = True  # the end of what is mounted is not the end: do not follow it
        if self._settling:
            return
        idle_gc = host_of(self.app).idle_gc
        if idle_gc is not None:
            idle_gc.input_seen()  # scrolling is input: no collection under it
        if new_value < old_value and new_value <= self.size.height and self.has_older and not self._loading:
            # Within a screen of the top: the page above loads before the user gets there. Every
            # scroll step up there lands here; one load at a time, never cancelled mid-mount.
            self.run_worker(self.load_older(), group="older")
        elif new_value >= self.max_scroll_y and old_value < new_value and self.has_newer:
            self.run_worker(self.load_newer(), group="newer")  # never cancelled mid-mount: no gaps
