"""The conversation on screen: the chat log, the status row, the composer, the turns that run in
its workers (turn_runner, turn_view) and the actions on its messages (message_actions).

The path of a message: the composer's ``Submitted`` -> ``_submitted`` -> ``run_turn`` (a worker:
turn_runner.run_turn drives core's AgentLoop and hands each event to a TurnView, which draws it
here). What the view needs of the app comes down as narrow callables (``ViewDeps``: the profile,
the tools, the client, approval, the header's title...); it never reads the app's attributes.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from textual import on, work
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from tui_agent.core import slash
from tui_agent.core.limits import message_too_long
from tui_agent.core.store import pages, worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.store.pages import Page
from tui_agent.core.textsafe import visible
from tui_agent.ui import conversation_actions
from tui_agent.ui.attach_actions import AttachActions
from tui_agent.ui.errors import friendly, store_unavailable
from tui_agent.ui.message_actions import STILL_RUNNING, MessageActions
from tui_agent.ui.queued import SendQueue
from tui_agent.ui.store_outage import StoreOutage
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import ErrorCard, NoticeCard, UserBubble
from tui_agent.ui.widgets.chat_log import ChatLog
from tui_agent.ui.widgets.composer import Composer, SlashHints
from tui_agent.ui.widgets.context_meter import ContextMeter
from tui_agent.ui.widgets.log_release import PAGE
from tui_agent.ui.widgets.message_cursor import CursorAction, CursorLeft
from tui_agent.ui.widgets.status import StatusLine

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import ComposeResult

    from tui_agent.core.llm import LLMClient
    from tui_agent.core.store.models import Profile
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.core.vault import Vault
    from tui_agent.ui.host import TurnHost, ViewDeps

log = logging.getLogger("tui_agent.ui")


class ConversationView(AttachActions, Vertical):
    """One conversation at a time (``conversation_id``; None: a new one, not stored yet); the turns
    of any conversation (``turns``: one worker per conversation, a reply goes on when the user
    looks at another one)."""

    def __init__(self, deps: ViewDeps, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.deps = deps
        self.conversation_id: int | None = None
        self.turns: dict[int | None, Worker[None]] = {}
        self.editing: int | None = None  # the user message being edited in the composer
        self._title = ""  # the conversation's title as last read or carried by a turn's event
        self.pending_attachments: list[str] = []
        self.send_queue = SendQueue(self)
        self.messages = MessageActions(self)
        self.outage = StoreOutage(self)

    def compose(self) -> ComposeResult:
        yield ChatLog(self.vault, id="chat-log")
        with Horizontal(id="status-row"):
            yield StatusLine("", id="status")
            yield ContextMeter(id="context-meter")
        yield Static("", id="pending-attachments", markup=False)
        # SlashHints (an OptionList) is mounted above the composer at the first "/": not on the first paint.
        yield Composer(id="composer")

    # ------------------------------------------------------------ what it holds
    @property
    def chat_log(self) -> ChatLog:
        return self.query_one("#chat-log", ChatLog)

    @property
    def composer(self) -> Composer:
        return self.query_one("#composer", Composer)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def vault(self) -> Vault:
        return self.deps.vault

    @property
    def clock(self) -> Callable[[], float]:
        return self.deps.clock

    @property
    def profile(self) -> Profile:
        return self.deps.profile()

    @property
    def registry(self) -> ToolRegistry:
        return self.deps.registry()

    # What a turn needs of the app (ui/host.TurnHost), handed down as callables.
    async def client_ready(self) -> None:
        await self.deps.client_ready()

    def llm_client(self, profile: Profile | None = None) -> LLMClient:
        return self.deps.llm_client(profile)

    async def approve(self, tool: str, question: str) -> bool:
        return await self.deps.approve(tool, question)

    async def before_turn(self) -> None:
        await self.deps.before_turn()

    def turn_ended(self) -> None:
        self.deps.turn_ended()

    def first_words_shown(self) -> None:
        self.deps.first_words_shown()

    async def reload_profile(self) -> Profile:
        return await self.deps.reload_profile()

    def store_away(self, kept: str | None, failure: str) -> None:
        self.outage.begin(kept, failure)

    # ------------------------------------------------------------ the composer
    @on(Composer.Changed)
    async def _composer_changed(self) -> None:
        self.deps.input_seen()
        specs = self.composer.matches()
        for hints in self.query_children("#slash-hints").results(SlashHints):
            hints.show(specs)
            return
        if specs:
            hints = SlashHints(id="slash-hints")
            await self.mount(hints, before=self.composer)
            hints.show(specs)

    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        text = event.text.strip()
        if (too_long := message_too_long(text)) is not None:  # core's rule, as the loop and `ask` apply it
            self.notify(too_long[:1].upper() + too_long[1:], severity="error")
            return
        if self.conversation_id in self.turns:
            if self.editing is not None:
                self.notify(STILL_RUNNING, severity="warning")
                return
            # Sent when the reply ends, as its own message (shown above the composer meanwhile).
            conversation_actions.clear_found(self)
            self.composer.remember(text)
            self.composer.clear()
            await self.send_queue.add(self.conversation_id, text)
            return
        try:
            command = slash.parse(text)  # core's parser: the loop reads the same text the same way
        except slash.SlashError as exc:
            await self.chat_log.mount(ErrorCard(friendly("usage", str(exc))))
            return
        if command is not None and command.name in (slash.HELP, slash.NEW):  # nothing to send: done here
            self.composer.clear()
            if command.name == slash.HELP:
                await self.action_help()
            else:
                await self.action_new_conversation()
            return
        self.composer.remember(text)
        self.composer.clear()
        attachments, self.pending_attachments = self.pending_attachments, []
        self.show_pending_attachments()
        edit_of, self.editing = self.editing, None
        # Scrolled up far (or jumped to a search hit, or moved the message cursor): back to the end,
        # following the message and its reply; a search hit's mark has served.
        conversation_actions.clear_found(self)
        await self.chat_log.go_to_end()
        bubble = None
        if not text.startswith("/") and edit_of is None:
            # The user's bubble shows at once; the turn adopts it once the message is stored.
            bubble = UserBubble(text, [self.vault.root / p for p in attachments])
            # The welcome line goes in the same frame as the bubble comes (not a layout later);
            # hidden, not removed: it comes back if nothing could be sent (see turn_runner).
            for welcome in self.chat_log.query_children(".welcome"):
                welcome.display = False
            await self.chat_log.mount(bubble)
        self.turns[self.conversation_id] = self.run_turn(
            self.conversation_id, text, attachments, edit_of=edit_of, bubble=bubble
        )

    @on(Composer.CursorRequested)
    def _cursor_requested(self) -> None:
        self.chat_log.enter_cursor()

    @on(Composer.ScrollLog)
    async def _scroll_log(self, event: Composer.ScrollLog) -> None:
        if event.where == "end":
            await self.chat_log.go_to_end()
        elif event.where == "page_up":
            self.chat_log.scroll_page_up()
        else:
            await self.chat_log.action_page_down()

    # ------------------------------------------------------------------ turns
    @work(group="turns", exit_on_error=False)
    async def run_turn(
        self,
        conversation_id: int | None,
        text: str,
        attachments: list[str],
        *,
        edit_of: int | None = None,
        regenerate: int | None = None,
        retry: bool = False,
        bubble: UserBubble | None = None,
    ) -> None:
        """One turn on screen: a new message, an edited one (``edit_of``: the conversation forks
        there), another answer in place of reply ``regenerate``, or the failed last turn again."""
        from tui_agent.ui.turn_runner import run_turn

        await run_turn(
            self, conversation_id, text, attachments, edit_of=edit_of, regenerate=regenerate, retry=retry, bubble=bubble
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == "turns":
            error = event.worker.error
            log.error("turn failed", exc_info=error)
            self.chat_log.mount(ErrorCard(friendly("error", f"{error.__class__.__name__}: {error}")))

    def action_retry_turn(self) -> None:
        """Send the failed last turn again, from the user message already stored."""
        if self.conversation_id is None:
            self.notify("Nothing to retry yet.")
        elif self.conversation_id in self.turns:
            self.notify(STILL_RUNNING, severity="warning")
        else:
            self.turns[self.conversation_id] = self.run_turn(self.conversation_id, "", [], retry=True)

    def action_cancel_turn(self) -> None:
        worker = self.turns.get(self.conversation_id)
        if worker is not None:
            worker.cancel()
            self.turns.pop(self.conversation_id, None)
        elif self.messages.stop_editing():
            pass
        elif any(hints.has_class("-visible") for hints in self.query_children(SlashHints)):
            self.composer.clear()

    # ------------------------------------------------------- message actions
    @on(CursorAction)
    async def _cursor_action(self, event: CursorAction) -> None:
        await self.run_action(event.action)

    @on(CursorLeft)
    def _cursor_left(self) -> None:
        self.composer.focus()

    @on(AlternativesBar.Chosen)
    async def _alternative_chosen(self, event: AlternativesBar.Chosen) -> None:
        await self.messages.alternative_chosen(event)

    def action_select_messages(self) -> None:
        self.chat_log.enter_cursor()

    def action_message_menu(self) -> None:
        self.messages.message_menu()

    def action_copy_message(self) -> None:
        self.messages.copy_message()

    def action_copy_code(self, index: int) -> None:
        self.messages.copy_code(index)

    def action_copy_to_prompt(self) -> None:
        self.messages.copy_to_prompt()

    def action_regenerate(self) -> None:
        self.messages.regenerate()

    def action_edit_message(self) -> None:
        self.messages.edit_message()

    def action_alternative(self, delta: int) -> None:
        self.messages.alternative(delta)

    def action_export_markdown(self) -> None:
        self.messages.export("md")

    def action_export_json(self) -> None:
        self.messages.export("json")

    # ------------------------------------------------------------------ help
    async def action_help(self) -> None:
        await self.chat_log.mount(NoticeCard(f"Slash commands\n{slash.help_text()}\n\nKeys\n{self.deps.help_keys()}"))

    # ------------------------------------------------------- the conversation
    async def open_conversation(
        self,
        conversation_id: int | None,
        *,
        until_id: int | None = None,
        remember: bool = True,
        page: Page | None = None,
    ) -> None:
        """``remember``: store it as the one to open next time (at start-up it already is);
        ``page``: its newest page, read already (else read now, on the store's thread)."""
        if conversation_id is not None and page is None:
            try:
                page = await worker.run(pages.opened, conversation_id, PAGE, until_id=until_id, remember=remember)
            except STORE_FAILURES as exc:
                self.notify(store_unavailable(exc), severity="error")
                return
            except LookupError:
                page = None
        self.conversation_id = conversation_id
        self._title = page.title if page is not None else ""
        await self.chat_log.show_page(conversation_id, page, until_id=until_id)
        for meter in self.query(ContextMeter):
            meter.clear()
        if conversation_id is None:
            await self.chat_log.mount(
                NoticeCard("New conversation. Type a message, or /help for commands.", classes="welcome")
            )
        if conversation_id:
            self.composer.recall_from(partial(pages.user_texts, conversation_id))
        else:
            self.composer.recall = []
        await self.deps.show_title(self.title(), True)
        self._status_for_conversation()

    def _status_for_conversation(self) -> None:
        """No stale state from another conversation: what runs here, or ready."""
        status = self.status_line
        if self.conversation_id in self.turns:
            status.show("a reply is running in this conversation…", state="busy")
        elif status.state not in ("connecting", "offline"):
            status.ready(self.profile.chat_model)

    def title(self, stored: str | None = None) -> str:
        """The header's title; ``stored``: the conversation's title as a turn's event carries it
        (else it is read)."""
        if self.conversation_id is None:
            return "new conversation"
        if stored is None:
            stored = self._title
        else:
            self._title = stored
        return visible(stored) or f"conversation {self.conversation_id}"

    async def conversation_started(self, conversation_id: int, title: str = "") -> None:
        """A turn created a conversation: it becomes the displayed one if the user is still on the
        empty view (the store remembers it already: history.new_conversation)."""
        if None in self.turns:
            self.turns[conversation_id] = self.turns.pop(None)
        if self.conversation_id is None:
            self.conversation_id = conversation_id
            self.chat_log.conversation_id = conversation_id
            for welcome in self.chat_log.query_children(".welcome"):
                await welcome.remove()
        await self.deps.show_title(self.title(title if self.conversation_id == conversation_id else None), True)

    async def show_title(self, stored: str) -> None:
        """The conversation's title in the header and the sidebar (``stored``: as the turn stored it;
        a new one is titled by its first message)."""
        await self.deps.show_title(self.title(stored), False)

    async def jump_to_message(self, conversation_id: int, message_id: int) -> None:
        await self.open_conversation(conversation_id, until_id=message_id + 5)
        conversation_actions.mark_found(self, message_id)

    async def action_new_conversation(self) -> None:
        await self.open_conversation(None)
        self.composer.focus()

    def action_rename_conversation(self) -> None:
        conversation_actions.rename(self)

    def action_delete_conversation(self) -> None:
        conversation_actions.delete(self)


if TYPE_CHECKING:

    def _runs_turns(view: ConversationView) -> TurnHost:
        return view  # mypy: the view is what a turn needs (ui/host.TurnHost)
