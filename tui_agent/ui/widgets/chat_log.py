"""The chat log: mounts only a page of the newest messages; older pages load on scroll-up, and after
a jump to a search hit, newer pages load on scroll-down."""

from __future__ import annotations

import json
from pathlib import Path

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from tui_agent.core.store import branches, history
from tui_agent.core.store.models import Message
from tui_agent.core.vault import Vault
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, UserBubble
from tui_agent.ui.widgets.message_cursor import CURSOR_BINDINGS, MessageCursorMixin
from tui_agent.ui.widgets.tool_block import ToolResultView

PAGE = 20


def result_status(content: str) -> str:
    try:
        return str(json.loads(content).get("status", "error"))
    except (json.JSONDecodeError, AttributeError):
        return "error"


class ChatLog(MessageCursorMixin, VerticalScroll):
    """Anchored to the bottom while the user has not scrolled away (``VerticalScroll.anchor``).
    Focused, it has a message cursor (see message_cursor)."""

    BINDINGS = CURSOR_BINDINGS

    def __init__(self, vault: Vault, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.vault = vault
        self.conversation_id: int | None = None
        self.oldest_id: int | None = None
        self.has_older = False
        self.newest_id: int | None = None
        self.has_newer = False  # after a jump to an older message: the pages after it are not mounted
        self._loading = False
        self._settling = False  # True while a page is being laid out: scroll moves are not the user's

    def on_mount(self) -> None:
        self.anchor()

    def widget_for(self, message: Message, images: list[str], forks: set[int] | None = None) -> Widget | None:
        paths = [self.vault.root / p for p in images]
        alternatives = branches.alternatives(message, forks or set())
        if message.role == "user":
            return UserBubble(message.content, paths, message_id=message.id, alternatives=alternatives)
        if message.role == "assistant":
            if not message.content and message.tool_calls and not message.reasoning:
                return None  # the call itself shows in the tool block
            status = "interrupted" if message.status == "streaming" else message.status
            return AssistantBubble(
                message.content,
                status=status,
                message_id=message.id,
                alternatives=alternatives,
                reasoning=message.reasoning or "",
            )
        if message.role == "error":
            return ErrorCard(message.content, message_id=message.id)
        if message.tool_call_id is not None:
            return self.tool_widget(
                message.tool_name or message.role, message.tool_arguments or "", message.content, paths, message.id
            )
        return None

    def tool_widget(self, name: str, arguments: str, output: str, paths: list[Path], message_id: int | None) -> Widget:
        return ToolResultView(name, arguments, output, result_status(output), paths, message_id=message_id)

    def _widgets(self, rows: list[Message]) -> list[Widget]:
        attachments = history.attachments_for([m.id for m in rows])
        forks = branches.fork_parents(rows[0].conversation_id) if rows else set()
        widgets = []
        for message in rows:
            widget = self.widget_for(message, attachments.get(message.id, []), forks)
            if widget is not None:
                widgets.append(widget)
        return widgets

    async def show_conversation(self, conversation_id: int | None, *, until_id: int | None = None) -> None:
        """Replace the log with the newest page (or the page ending at ``until_id``)."""
        self.conversation_id = conversation_id
        await self.remove_children()
        self.oldest_id = None
        self.has_older = False
        self.newest_id = None
        self.has_newer = False
        if conversation_id is None:
            return
        before = until_id + 1 if until_id is not None else None
        rows = history.recent_messages(conversation_id, limit=PAGE, before_id=before)
        if rows:
            self.oldest_id = rows[0].id
            self.has_older = len(rows) == PAGE
            self.newest_id = rows[-1].id
            self.has_newer = bool(history.messages_after(conversation_id, rows[-1].id, 1))
        self._settling = True
        await self.mount_all(self._widgets(rows))
        if not self.has_newer:
            self.anchor()
        self.call_after_refresh(self._settled)

    async def mark_window_start(self, first_message_id: int | None) -> None:
        """A quiet line above the oldest message the model still sees (None: it sees everything)."""
        for marker in self.query(".window-marker"):
            await marker.remove()
        ids = [getattr(widget, "message_id", None) for widget in self.children]
        if first_message_id is None or not any(i is not None and i < first_message_id for i in ids):
            return  # nothing left out, or the boundary is on a page that is not loaded
        for widget in self.children:
            if (getattr(widget, "message_id", None) or 0) >= first_message_id:
                await self.mount(
                    Static("··· the model no longer sees the messages above this line ···", classes="window-marker"),
                    before=widget,
                )
                return

    def _settled(self) -> None:
        self._settling = False
        self._fill_newer()

    def _at_end(self) -> bool:
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y

    def _fill_newer(self) -> None:
        """While the view reaches the end of what is mounted (a short page, or a jump near its end),
        scrolling down cannot move: load the next page now, so there is always more below."""
        if self.has_newer and not self._settling and self._at_end():
            self.run_worker(self.load_newer(), group="newer")

    def on_mouse_scroll_down(self) -> None:
        # At the end already the scroll position does not change: the wheel still asks for more.
        if self.has_newer and not self._settling and self._at_end():
            self.run_worker(self.load_newer(), group="newer")

    async def load_older(self) -> int:
        """Prepend the previous page; keep the view where it was. Returns how many rows loaded."""
        if self._loading or not self.has_older or self.conversation_id is None:
            return 0
        self._loading = True
        try:
            rows = history.recent_messages(self.conversation_id, limit=PAGE, before_id=self.oldest_id)
            self.has_older = len(rows) == PAGE
            if not rows:
                return 0
            self.oldest_id = rows[0].id
            widgets = self._widgets(rows)
            first = self.children[0] if self.children else None
            if widgets:
                if first is not None:
                    await self.mount_all(widgets, before=first)
                    self.call_after_refresh(self.scroll_to_widget, first, top=True, animate=False)
                else:
                    await self.mount_all(widgets)
            return len(rows)
        finally:
            self._loading = False

    async def load_newer(self) -> int:
        """Append the next page after the newest mounted message. Returns how many rows loaded."""
        if self._loading or not self.has_newer or self.conversation_id is None or self.newest_id is None:
            return 0
        self._loading = True
        try:
            rows = history.messages_after(self.conversation_id, self.newest_id, PAGE + 1)
            self.has_newer = len(rows) > PAGE
            rows = rows[:PAGE]
            if rows:
                self.newest_id = rows[-1].id
                await self.mount_all(self._widgets(rows))
            if not self.has_newer:
                self.anchor()  # the newest message is on screen again: follow new replies
            else:
                self.call_after_refresh(self._fill_newer)
            return len(rows)
        finally:
            self._loading = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value <= 0 and old_value > 0 and self.has_older and not self._settling:
            self.run_worker(self.load_older(), group="older", exclusive=True)
        at_end = new_value >= self.max_scroll_y and new_value > old_value
        if at_end and self.has_newer and not self._settling:
            self.run_worker(self.load_newer(), group="newer")  # never cancelled mid-mount: no gaps
