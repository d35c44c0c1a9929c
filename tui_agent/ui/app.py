"""The full-screen app: chat log, composer, status line, sidebar; the core loop runs in workers."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Header, Static
from textual.worker import Worker, WorkerState

from tui_agent.core import profiles, slash
from tui_agent.core.limits import message_too_long
from tui_agent.core.store import history
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault
from tui_agent.ui import text_guard, textual_fixes
from tui_agent.ui.commands import AgentCommands, HistorySearch
from tui_agent.ui.errors import friendly
from tui_agent.ui.gc_tuning import IdleCollector
from tui_agent.ui.mcp_control import McpControl
from tui_agent.ui.paths import styles_dir
from tui_agent.ui.queued import SendQueue
from tui_agent.ui.startup import StartupMixin
from tui_agent.ui.widgets.bubbles import ErrorCard, UserBubble
from tui_agent.ui.widgets.chat_log import ChatLog
from tui_agent.ui.widgets.composer import Composer, SlashHints
from tui_agent.ui.widgets.context_meter import ContextMeter
from tui_agent.ui.widgets.status import StatusLine

if TYPE_CHECKING:
    from tui_agent.core.llm import LLMClient
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.ui.widgets.host import WidgetHost

log = logging.getLogger("tui_agent.ui")


class AgentApp(StartupMixin):
    TITLE = "tui-agent"
    CSS_PATH = [styles_dir() / "app.tcss"]
    COMMANDS = App.COMMANDS | {AgentCommands, HistorySearch}
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel", id="app.cancel"),
        Binding("ctrl+b", "toggle_sidebar", "Sidebar", id="app.sidebar"),
        Binding("ctrl+n", "new_conversation", "New chat", id="app.new"),
        Binding("ctrl+o", "toggle_tools", "Tools ±", id="app.tools"),
        Binding("ctrl+g", "toggle_thinking", "Thinking ±", id="app.thinking", show=False),
        Binding("ctrl+t", "attach", "Attach", id="app.attach"),
        Binding("ctrl+l", "show_log", "Log", id="app.log"),
        Binding("ctrl+r", "retry_turn", "Retry", id="app.retry", show=False),  # the error says so
        Binding("f1", "help", "Help", id="app.help"),
        Binding("f3", "open_image", "Open image", id="app.open_image"),
        Binding("f4", "download_image", "Download image", show=False, id="app.download_image"),
        Binding("alt+up", "select_messages", "Messages", show=False, id="app.select_messages"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    def __init__(
        self,
        vault: Vault,
        *,
        profile_name: str | None = None,
        images: str | None = None,
        check_endpoint: bool = True,
        registry: ToolRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        animate: bool = True,
    ) -> None:
        textual_fixes.apply()
        text_guard.install()  # no control character of any widget's text reaches the terminal
        super().__init__()
        self.vault = vault
        profiles.set_run_profile(profile_name or None)  # this run only; `profile use` switches for good
        self._images_choice = images
        self._image_class: type | None = None
        self.check_endpoint = check_endpoint
        self._tool_registry = registry
        self._preload: Worker[None] | None = None
        self._until_painted: list[Callable[[], object]] | None = []  # None once the first frame is drawn
        self._preload_done = asyncio.Event()
        self._llm_clients: dict[tuple[str, str, float, str], LLMClient] = {}
        self.clock = clock
        self.live_motion = animate
        self.thinking_hidden = False  # every thinking block hidden (Ctrl+G): widgets/thinking.toggle_all
        self.freeze_gc_after_preload = False  # set by run_app: tests keep the collector as it is
        self.conversation_id: int | None = None
        self.turns: dict[int | None, Worker[None]] = {}
        self.idle_gc = IdleCollector(self)  # full collections between replies, not during them
        self.always_approve = False
        self.pending_attachments: list[str] = []
        self.mcp = McpControl(self)
        self.send_queue = SendQueue(self)

    # ----------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield ChatLog(self.vault, id="chat-log")
                with Horizontal(id="status-row"):
                    yield StatusLine("", id="status")
                    yield ContextMeter(id="context-meter")
                yield Static("", id="pending-attachments", markup=False)
                # SlashHints (an OptionList) is mounted above the composer at the first "/": not on the first paint.
                yield Composer(id="composer")
        # The Footer is built right after the first paint (_after_first_paint): it recomposes its
        # keys on every bindings change at start-up (focus, screen), a third of the first paint.
        yield Static(id="footer-slot")

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def image_class(self) -> type:
        """The textual-image widget class (resolved on first use; the module is imported before run)."""
        if self._image_class is None:
            from tui_agent.ui.images import image_class

            self._image_class = image_class(self._images_choice)
        return self._image_class

    @property
    def registry(self) -> ToolRegistry:
        if self._tool_registry is None:
            from tui_agent.core.tools.registry import default_registry

            self._tool_registry = default_registry()
        return self._tool_registry

    @property
    def profile(self) -> Profile:
        return profiles.active_profile()

    async def on_mount(self) -> None:
        from tui_agent.ui.themes import apply_saved_theme

        apply_saved_theme(self)
        # The status first: opening the conversation then leaves a "connecting" line as it is.
        profile = self.profile
        if self.check_endpoint:
            self.status_line.connecting(profile.base_url)
        else:
            self.status_line.ready(profile.chat_model)
        last = history.last_conversation()
        # Not stored again: next start finds the same one (a write transaction saved on the first paint).
        await self.open_conversation(last.id if last else None, remember=False)
        from tui_agent.ui.live_updates import follow

        self.live_updates = follow(self)  # PostgreSQL: what other machines store shows here as it comes
        self.composer.focus()
        self.ask_about_trust()  # a ./jj_vault not trusted yet: the dialog comes over the chat
        self.mcp.install_signal_handlers()
        log.info("chat screen ready (pid %d)", os.getpid())
        # The openai import (~0.5-1 s) starts right after the first frame, so a message sent at once
        # waits as little as possible for it (run.py may have started it even earlier).
        self.call_after_refresh(self._after_first_paint)

    # ------------------------------------------------------------------ turns
    @on(Composer.Changed)
    async def _composer_changed(self) -> None:
        self.idle_gc.input_seen()
        specs = self.composer.matches()
        for hints in self.query("#slash-hints").results(SlashHints):
            hints.show(specs)
            return
        if specs:
            hints = SlashHints(id="slash-hints")
            await self.query_one("#chat-column").mount(hints, before=self.composer)
            hints.show(specs)

    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        text = event.text.strip()
        if (too_long := message_too_long(text)) is not None:  # core's rule, as the loop and `ask` apply it
            self.notify(too_long[:1].upper() + too_long[1:], severity="error")
            return
        if self.conversation_id in self.turns:
            if self.editing is not None:
                self.notify("A reply is still running here: wait, or press Esc to cancel it.", severity="warning")
                return
            # Sent when the reply ends, as its own message (shown above the composer meanwhile).
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
        # following the message and its reply.
        await self.chat_log.go_to_end()
        bubble = None
        if not text.startswith("/") and edit_of is None:
            # The user's bubble shows at once; the turn adopts it once the message is stored.
            bubble = UserBubble(text, [self.vault.root / p for p in attachments])
            # The welcome line goes in the same frame as the bubble comes (not a layout later);
            # hidden, not removed: it comes back if nothing could be sent (see turn_runner).
            for welcome in self.chat_log.query(".welcome"):
                welcome.display = False
            await self.chat_log.mount(bubble)
        self.turns[self.conversation_id] = self.run_turn(
            self.conversation_id, text, attachments, edit_of=edit_of, bubble=bubble
        )

    def action_retry_turn(self) -> None:
        """Send the failed last turn again, from the user message already stored."""
        if self.conversation_id is None:
            self.notify("Nothing to retry yet.")
        elif self.conversation_id in self.turns:
            self.notify("A reply is still running here: wait, or press Esc to cancel it.", severity="warning")
        else:
            self.turns[self.conversation_id] = self.run_turn(self.conversation_id, "", [], retry=True)

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

    async def on_unmount(self) -> None:
        profiles.set_run_profile(None)  # --profile was for this run of the app only
        await self.mcp.aclose()  # every MCP server process ends with the app
        for client in self._llm_clients.values():
            await client.close()

    async def approve(self, tool: str, question: str) -> bool:
        if self.always_approve:
            return True
        from tui_agent.ui.screens.dialogs import ApprovalScreen

        self.status_line.awaiting_approval(tool)  # not "running": nothing runs until the user answers
        choice = await self.push_screen_wait(ApprovalScreen(tool, question))
        self.status_line.tool_running(tool)
        if choice == "always":
            self.always_approve = True
        return choice in ("yes", "always")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == "turns":
            error = event.worker.error
            log.error("turn failed", exc_info=error)
            self.chat_log.mount(ErrorCard(friendly("error", f"{error.__class__.__name__}: {error}")))

    @on(Composer.CursorRequested)
    def _cursor_requested(self) -> None:
        self.chat_log.enter_cursor()

    def action_cancel_turn(self) -> None:
        worker = self.turns.get(self.conversation_id)
        if worker is not None:
            worker.cancel()
            self.turns.pop(self.conversation_id, None)
        elif self.stop_editing():
            pass
        elif any(hints.has_class("-visible") for hints in self.query(SlashHints)):
            self.composer.clear()


if TYPE_CHECKING:

    def _gives_widgets_what_they_read(app: AgentApp) -> WidgetHost:
        return app  # mypy: AgentApp is a WidgetHost (widgets/host.py)
