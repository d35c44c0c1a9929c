"""Conversation navigation for the app: open, new, switch, rename, delete, jump to a message."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import App
from textual.notifications import SeverityLevel
from textual.worker import Worker

from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.core.textsafe import visible
from tui_agent.ui.chat_screen import ChatScreen
from tui_agent.ui.widgets.bubbles import NoticeCard
from tui_agent.ui.widgets.chat_log import ChatLog
from tui_agent.ui.widgets.composer import Composer
from tui_agent.ui.widgets.sidebar_messages import ConversationsAction, ConversationSelected
from tui_agent.ui.widgets.status import StatusLine


class ConversationsApp(App[None]):
    """The base of AgentApp: which conversation is on screen, and the actions that change it."""

    conversation_id: int | None = None
    turns: dict[int | None, Worker[Any]]

    def get_default_screen(self) -> ChatScreen:
        return ChatScreen(id="_default")  # focus goes back to the composer whenever it resumes

    @property
    def chat_log(self) -> ChatLog:
        return self.query_one("#chat-log", ChatLog)

    @property
    def composer(self) -> Composer:
        return self.query_one("#composer", Composer)

    async def open_conversation(
        self, conversation_id: int | None, *, until_id: int | None = None, remember: bool = True
    ) -> None:
        """``remember``: store it as the one to open next time (at start-up it already is)."""
        self.conversation_id = conversation_id
        if conversation_id is not None and remember:
            history.remember_conversation(conversation_id)
        await self.chat_log.show_conversation(conversation_id, until_id=until_id)
        for meter in self.query("ContextMeter"):
            meter.clear()  # type: ignore[attr-defined]
        if conversation_id is None:
            await self.chat_log.mount(
                NoticeCard("New conversation. Type a message, or /help for commands.", classes="welcome")
            )
        if conversation_id:
            self.composer.recall_from(
                lambda: [m.content for m in history.recent_messages(conversation_id, 50) if m.role == "user"]
            )
        else:
            self.composer.recall = []
        self.sub_title = self._title()
        await self._reload_conversation_list()
        self._status_for_conversation()

    def _status_for_conversation(self) -> None:
        """No stale state from another conversation: what runs here, or ready."""
        for status in self.query("#status").results(StatusLine):
            if self.conversation_id in self.turns:
                status.show("a reply is running in this conversation…", state="busy")
            elif status.state not in ("connecting", "offline"):
                status.ready(profiles.active_profile().chat_model)

    def _title(self, stored: str | None = None) -> str:
        """The header's title; ``stored``: the conversation's title as a turn's event carries it
        (else it is read)."""
        if self.conversation_id is None:
            return "new conversation"
        if stored is None:
            stored = history.get_conversation(self.conversation_id).title
        return visible(stored) or f"conversation {self.conversation_id}"

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Notifications often name files or quote errors: shown as plain text, control characters visible."""
        # Always plain: a file name like "a[b].png" is not markup, whoever called notify.
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    async def conversation_started(self, conversation_id: int, title: str = "") -> None:
        """A turn created a conversation: it becomes the displayed one if the user is still on the empty view."""
        history.remember_conversation(conversation_id)
        if None in self.turns:
            self.turns[conversation_id] = self.turns.pop(None)
        if self.conversation_id is None:
            self.conversation_id = conversation_id
            self.chat_log.conversation_id = conversation_id
            for welcome in self.chat_log.query(".welcome"):
                await welcome.remove()
        self.sub_title = self._title(title if self.conversation_id == conversation_id else None)
        await self._reload_conversation_list()

    async def show_title(self, stored: str) -> None:
        """The conversation's title in the header and the sidebar (``stored``: as the turn stored it;
        a new one is titled by its first message)."""
        title = self._title(stored)
        if title != self.sub_title:
            self.sub_title = title
            await self._reload_conversation_list()

    async def _reload_conversation_list(self) -> None:
        for conversations in self.query("ConversationList"):
            await conversations.reload(self.conversation_id)  # type: ignore[attr-defined]

    async def jump_to_message(self, conversation_id: int, message_id: int) -> None:
        await self.open_conversation(conversation_id, until_id=message_id + 5)
        self.chat_log.release_anchor()
        for widget in self.chat_log.children:
            if (
                getattr(widget, "message_id", None) == message_id
                or getattr(getattr(widget, "block", None), "message_id", None) == message_id
            ):
                widget.add_class("-found")
                self.call_after_refresh(self.chat_log.scroll_to_widget, widget, top=True, animate=False)
                break

    @on(ConversationSelected)
    async def _conversation_selected(self, event: ConversationSelected) -> None:
        if event.conversation_id != self.conversation_id:
            await self.open_conversation(event.conversation_id)

    @on(ConversationsAction)
    async def _conversation_action(self, event: ConversationsAction) -> None:
        await self.run_action(
            {"new": "new_conversation", "rename": "rename_conversation", "delete": "delete_conversation"}[event.action]
        )

    async def action_new_conversation(self) -> None:
        await self.open_conversation(None)
        self.composer.focus()

    def action_rename_conversation(self) -> None:
        if self.conversation_id is None:
            self.notify("Nothing to rename yet: send a message first.")
            return
        conversation_id = self.conversation_id
        from tui_agent.ui.screens.dialogs import PromptScreen

        async def done(title: str | None) -> None:
            if title:
                history.rename_conversation(conversation_id, title)
                self.sub_title = self._title()
                await self._reload_conversation_list()

        self.push_screen(PromptScreen("Rename conversation", self._title()), done)

    def action_delete_conversation(self) -> None:
        if self.conversation_id is None:
            return
        conversation_id = self.conversation_id
        from tui_agent.ui.screens.dialogs import ConfirmScreen

        async def done(confirmed: bool | None) -> None:
            if confirmed:
                worker = self.turns.pop(conversation_id, None)
                if worker is not None:
                    worker.cancel()
                history.delete_conversation(conversation_id)
                await self.open_conversation(None)

        self.push_screen(ConfirmScreen(f"Delete “{self._title()}” and all its messages?"), done)
