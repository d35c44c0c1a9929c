"""Live across machines (PostgreSQL): what another machine (or another process) stores shows here
as it is committed. core/store/pg_listen.py listens; this moves its changes to the app's event
loop and draws them: new messages of the open conversation are appended to the chat log (nothing
rebuilt), a reply running elsewhere shows as running (and grows as it is saved), and the sidebar's
list of conversations is read again. Nothing here for a SQLite store (one machine).

The app calls ``follow(app)`` once it shows its first conversation; everything else is looked up
by id (``#chat-log``, ``#status``) and through ``app.conversation_id`` / ``app.turns``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from tui_agent.core.store import pages, worker
from tui_agent.core.store.models import Message
from tui_agent.core.store.pages import Page
from tui_agent.core.store.pg_listen import Change, Listener
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.log_release import PAGE, message_id_of

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from tui_agent.core.store.models import Profile
    from tui_agent.ui.widgets.chat_log import ChatLog

log = logging.getLogger("tui_agent.ui")
RUNNING_ELSEWHERE = "a reply is running in this conversation on another machine…"
RETRY_S = 0.3  # while a turn of this app runs in the open conversation, what others wrote waits this long
RETRY_AFTER_FAILURE_S = 1.0  # the store failed while drawing what changed: everything is looked at again
RETRIES = 3


class LiveHost(Protocol):
    """What this reads of the app: the conversation on screen, and where its own replies run."""

    @property
    def conversation_id(self) -> int | None: ...

    @property
    def turns(self) -> Mapping[int | None, object]: ...

    @property
    def profile(self) -> Profile: ...

    def store_seems_away(self, where: str) -> None: ...


def follow(app: App[Any]) -> LiveUpdates | None:
    """Start following the store's changes if it is a PostgreSQL one (None for SQLite)."""
    from tui_agent.core.store import changes

    origin = changes.origin()
    if origin is None:
        return None  # nothing to follow (one machine's file)
    live = LiveUpdates(app, origin)
    live.listener = changes.listen(live.arrived_in_thread, alive=lambda: app.is_running)
    return live


class LiveUpdates:
    def __init__(self, app: App[Any], origin: str) -> None:
        self.app = app
        self.host = cast(LiveHost, app)
        self.origin = origin  # this process's writes: shown already, by the turns that made them
        self.listener: Listener | None = None
        self._loop = asyncio.get_running_loop()
        self._changes: list[Change] = []
        self._scheduled = False
        self._waiting_in: int | None = None  # the conversation the ids below belong to
        self._waiting: set[int] = set()  # message ids of the open conversation, written elsewhere, not drawn yet
        self._everything = False  # reconnected: whatever is newer than the screen is drawn
        self._running_elsewhere = False
        self._drawing = asyncio.Lock()
        self._failures = 0  # in a row (the store away): a few more looks, then the next change's

    def arrived_in_thread(self, change: Change) -> None:
        """The listener's thread: over to the event loop (a closed loop: the app is gone)."""
        if change.origin == self.origin:
            return
        try:
            self._loop.call_soon_threadsafe(self._arrived, change)
        except RuntimeError:
            if self.listener is not None:
                self.listener.stop(timeout=0)

    def _arrived(self, change: Change) -> None:
        if change.kind == "lost":
            self.app.run_worker(self._look_at_the_store(), group="live-lost", exit_on_error=False)
            return
        self._changes.append(change)
        if not self._scheduled:
            self._scheduled = True
            self.app.call_later(self._sync)  # every change that came meanwhile, at once

    async def _look_at_the_store(self) -> None:
        """The listener's connection ended: if the store's server is away too, the status line says
        so now, and the app waits for it as after a failed call (ui/store_outage.py). An idle app
        said nothing until the user's next message."""
        from tui_agent.core.store import recovery
        from tui_agent.ui.errors import store_failure, store_where

        try:
            await worker.run(recovery.ping)
            return  # the server answers: only the listener's connection went (it connects again)
        except Exception as exc:
            failure = store_failure(exc)
            if failure is None or failure[0] != "store_away":
                raise
        if self.app.is_running:
            log.info("the store's server is away (the live updates' connection ended)")
            self.host.store_seems_away(store_where())

    async def _sync(self) -> None:
        async with self._drawing:  # one at a time: each reads what the one before drew
            self._scheduled = False
            changes, self._changes = self._changes, []
            if changes and self.app.is_running:
                await self._sync_changes(changes)

    async def _sync_changes(self, changes: list[Change]) -> None:
        try:
            await self._apply(changes)
            self._failures = 0
        except Exception:  # the store went away meanwhile: look again a little later, a few times
            self._failures += 1
            log.warning("live updates: could not show what changed (%d)", self._failures, exc_info=True)
            if self._failures <= RETRIES:
                self.app.set_timer(RETRY_AFTER_FAILURE_S, lambda: self._arrived(Change.reconnected()))

    async def _apply(self, changes: list[Change]) -> None:
        current = self.host.conversation_id
        everything = any(c.kind == "reconnected" for c in changes)  # what was announced meanwhile is lost
        if current != self._waiting_in:
            self._waiting_in, self._waiting, self._everything = current, set(), False
        self._everything |= everything
        self._waiting |= {c.message_id for c in changes if c.conversation_id == current and c.message_id is not None}
        if everything or any(c.kind == "conversation" or c.conversation_id != current for c in changes):
            for conversations in self.app.query("ConversationList"):
                await conversations.reload(current)  # type: ignore[attr-defined]
        if current is None or not (self._waiting or self._everything):
            return
        if current in self.host.turns:
            # This app's own reply runs here: what others wrote is drawn after it.
            self.app.set_timer(RETRY_S, lambda: self._arrived(Change(current, None, "retry")))
            return
        waiting, everything = self._waiting, self._everything
        self._waiting, self._everything = set(), False
        await self._draw(current, waiting, everything)

    async def _draw(self, conversation_id: int, waiting: set[int], everything: bool) -> None:
        chat_log: ChatLog = self.app.query_one("#chat-log")  # type: ignore[assignment]
        if chat_log.conversation_id != conversation_id:
            return
        shown = {found: child for child in chat_log.children if (found := message_id_of(child)) is not None}
        last = max(shown, default=0)
        again = waiting & shown.keys()
        if everything:  # what was announced while the listener was away is lost: running replies may have ended
            again |= {
                i for i, child in shown.items() if isinstance(child, AssistantBubble) and child.status == "streaming"
            }
        # One call on the store's thread reads all of it (the screen keeps drawing meanwhile).
        read = await worker.run(pages.changes, conversation_id, again, last, PAGE)
        if chat_log.conversation_id != conversation_id:
            return
        for row in read.changed.rows:
            if row.id in shown and shown[row.id].is_attached:
                await self._replace(chat_log, shown[row.id], row, read.changed)
        if not chat_log.has_newer:  # else they load, with the pages released below the view, on the way down
            # Only what others wrote: this app's own rows are on screen already (some as cards without an id).
            fresh = [row for row in read.fresh.rows if row.id not in shown and (everything or row.id in waiting)]
            if any(i < last and i not in shown for i in waiting) and any(i in waiting for i in read.path_ids):
                # Another machine wrote into this conversation while this app's reply ran: the
                # branch on screen interleaves with it, so it is drawn again as stored.
                await chat_log.show_conversation(conversation_id)
            elif fresh:
                for welcome in chat_log.query(".welcome"):
                    await welcome.remove()
                await self._mount(chat_log, fresh, read.fresh)
        self._show_running(read.newest)

    async def _mount(self, chat_log: ChatLog, rows: list[Message], page: Page) -> None:
        for row in rows:
            widget = self._widget(chat_log, row, page)
            if widget is None:
                continue
            await chat_log.mount(widget)
            if isinstance(widget, AssistantBubble) and widget.status == "streaming" and row.content:
                await widget.write(row.content)

    def _widget(self, chat_log: ChatLog, row: Message, page: Page) -> Widget | None:
        if row.role == "assistant" and row.status == "streaming":
            # Running on another machine (a stored "streaming" row elsewhere means an interrupted one).
            return AssistantBubble(status="streaming", message_id=row.id, thinking=True)
        return chat_log.widget_for(row, page.attachments.get(row.id, []), page.alternatives.get(row.id))

    async def _replace(self, chat_log: ChatLog, old: Widget, row: Message, page: Page) -> None:
        if isinstance(old, AssistantBubble) and old.status == "streaming":
            if row.status == "streaming" or not row.reasoning:
                await self._grow(old, row)
                return
            # Finished, with the model's reasoning: drawn as stored (its Thinking block included), as
            # reopening the conversation draws it; the running bubble had the answer only.
        new = self._widget(chat_log, row, page)
        had_cursor = chat_log.cursor is old
        if new is not None:
            await chat_log.mount(new, before=old)
        await chat_log._release([old])  # as the log takes its own widgets away
        if had_cursor and new is not None:
            chat_log.move_cursor_to(new, scroll=False)

    async def _grow(self, bubble: AssistantBubble, row: Message) -> None:
        """A reply running elsewhere, saved again (every half second) or finished: its bubble grows
        in place, as this app's own replies do (built again, a live bubble could come back)."""
        shown = bubble.text
        if row.content.startswith(shown) and len(row.content) > len(shown):
            await bubble.write(row.content[len(shown) :])
        if row.status != "streaming":
            await bubble.finish(row.status)
            bubble.status = row.status

    def _show_running(self, newest: Message | None) -> None:
        from tui_agent.ui.widgets.status import StatusLine

        running = newest is not None and newest.role == "assistant" and newest.status == "streaming"
        for status in self.app.query("#status").results(StatusLine):
            if running:
                status.show(RUNNING_ELSEWHERE, state="busy")
            elif self._running_elsewhere and status.state == "busy":
                status.ready(self.host.profile.chat_model)
        self._running_elsewhere = running
