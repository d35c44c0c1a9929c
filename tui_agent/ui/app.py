"""The full-screen app: chat log, composer, status line, sidebar; the core loop runs in workers."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState

from tui_agent.core import profiles, slash
from tui_agent.core.limits import MAX_MESSAGE_CHARS
from tui_agent.core.store import history
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault
from tui_agent.ui import textual_fixes
from tui_agent.ui.commands import AgentCommands, HistorySearch
from tui_agent.ui.errors import friendly, setup_text
from tui_agent.ui.gc_tuning import IdleCollector
from tui_agent.ui.mcp_control import McpControl
from tui_agent.ui.panel_actions import PanelActionsMixin
from tui_agent.ui.paths import styles_dir
from tui_agent.ui.widgets.bubbles import ErrorCard, NoticeCard, UserBubble
from tui_agent.ui.widgets.chat_log import ChatLog
from tui_agent.ui.widgets.composer import Composer, SlashHints
from tui_agent.ui.widgets.context_meter import ContextMeter
from tui_agent.ui.widgets.status import StatusLine

if TYPE_CHECKING:
    from tui_agent.core.llm import LLMClient
    from tui_agent.core.tools.registry import ToolRegistry

log = logging.getLogger("tui_agent.ui")
FOOTER_LATEST_S = 1.0  # after the client, when a reply sent at once has no words yet


class AgentApp(PanelActionsMixin):
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
        self.freeze_gc_after_preload = False  # set by run_app: tests keep the collector as it is
        self.conversation_id: int | None = None
        self.turns: dict[int | None, Worker[None]] = {}
        self.idle_gc = IdleCollector(self)  # full collections between replies, not during them
        self.always_approve = False
        self.pending_attachments: list[str] = []
        self.mcp = McpControl(self)

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
        self.composer.focus()
        self.mcp.install_signal_handlers()
        log.info("chat screen ready (pid %d)", os.getpid())
        # The openai import (~0.5-1 s) starts right after the first frame, so a message sent at once
        # waits as little as possible for it (run.py may have started it even earlier).
        self.call_after_refresh(self._after_first_paint)

    def _after_first_paint(self) -> None:
        from tui_agent.ui import warmup

        # First: a message sent at once waits for this import and nothing before it.
        warmup.start(hold_for_client=True)
        self._preloaded()
        waiting, self._until_painted = self._until_painted or [], None
        for callback in waiting:
            callback()
        # The Footer follows the client (_preload_finished), or a reply sent at once, whose first
        # words come first: built now, it shared the core with the import they wait for.

    def when_painted(self, callback: Callable[[], object]) -> None:
        """``callback`` once the first frame is on screen (at once if it is). Textual's "after
        refresh" is not that at start-up: a widget mounted with the first page can see its
        callbacks run before anything was laid out."""
        if self._until_painted is None:
            callback()
        else:
            self._until_painted.append(callback)

    async def _mount_footer(self) -> None:
        # Deferred (a timer, call_later): the app may be closing by now, its screens already gone.
        if self._closing or not self.screen_stack or self.screen_stack[0]._closing:
            return
        main = self.screen_stack[0]
        for slot in main.query("#footer-slot"):
            await main.mount(Footer(), after=slot)
            await slot.remove()
            main.refresh_bindings()  # the Footer shows keys once told that the bindings are ready

    def first_words_shown(self) -> None:
        """The first reply's first words are on screen (or its turn ended): what waited comes now."""
        from tui_agent.ui import warmup

        warmup.first_words_shown()
        self.call_later(self._mount_footer)

    def _preloaded(self) -> Worker[None]:
        if self._preload is None:
            from tui_agent.core.llm_errors import LLMError

            client: LLMClient | None = None
            try:
                client = self.llm_client()
            except (LLMError, profiles.ProfileError) as exc:  # the profile names an API key variable not set
                log.warning("no client yet: %s", exc)
                self.status_line.show(str(exc), state="error")  # each turn says it again, as an error card
            self._preload = cast("Worker[None]", self.preload_client(client))
        return self._preload

    def llm_client(self, profile: Profile | None = None) -> LLMClient:
        """One client per endpoint for the app's life: its connection stays open between turns
        (no new TCP and TLS handshake before each reply). ``profile``: the active one, if read."""
        from tui_agent.core.llm import LLMClient, resolve_api_key

        profile = profile or self.profile
        key = (profile.base_url, resolve_api_key(profile), float(profile.request_timeout_s), profile.api_key_env)
        client = self._llm_clients.get(key)
        if client is None:
            client = self._llm_clients[key] = LLMClient.for_profile(profile)
        return client

    @work(thread=True, exit_on_error=False, group="startup")
    def preload_client(self, client: LLMClient | None) -> None:
        """After the first paint, in one thread (concurrent imports of one package can see it half
        initialised): import openai and what the first turn needs, build the client, then check
        that the endpoint answers."""
        registry: ToolRegistry | None = None
        try:
            from tui_agent.ui import warmup

            warmup.wait_for_request()
            from tui_agent.core.tools.registry import default_registry

            if client is not None:
                client.client  # noqa: B018 - the openai client (its TLS context) is built here, not on Enter
            registry = default_registry()  # plugins are looked up here too, off the event loop
        except Exception:  # the turn builds them again and reports the error where the user sees it
            log.exception("preparing the client failed")
        finally:
            from tui_agent.ui import warmup

            warmup.client_built()  # the warm-up goes on with what shows the reply
            self.call_from_thread(self._preload_finished, registry)
        if self.check_endpoint and not self.turns:  # a message already sent finds out for itself
            self.probe_endpoint()

    def _preload_finished(self, registry: ToolRegistry | None) -> None:
        from tui_agent.ui import warmup

        log.info(
            "client ready (imports started %.2f s ago, took %.2f s)",
            time.time() - warmup.timings.get("started_at", time.time()),
            warmup.timings.get("request_s", 0.0),
        )
        if self._tool_registry is None:
            self._tool_registry = registry  # else the property builds it on first use
        if self.freeze_gc_after_preload:
            from tui_agent.ui.gc_tuning import freeze_long_lived

            freeze_long_lived()  # openai's types, the tools: as long-lived as the modules frozen at start
        self._preload_done.set()
        if not self.turns:  # else after the reply's first words (first_words_shown), or a second
            self.call_later(self._mount_footer)
        else:
            self.set_timer(FOOTER_LATEST_S, self._mount_footer)
        self.mcp.start_in_background()

    def probe_endpoint(self) -> None:
        import httpx2  # openai's own HTTP library: imported already, nothing more to load

        profile = self.profile
        try:
            httpx2.get(profile.base_url.rstrip("/") + "/models", timeout=3.0)
        except httpx2.HTTPError:
            log.info("no endpoint answers at %s", profile.base_url)
            self.call_from_thread(self._show_setup_card, profile.base_url)
            return
        self.call_from_thread(self._endpoint_answered)

    def _show_setup_card(self, base_url: str) -> None:
        self.chat_log.mount(NoticeCard(setup_text(base_url), classes="setup-card"))
        if self.status_line.state == "connecting":
            self.status_line.offline(base_url)

    def _endpoint_answered(self) -> None:
        if self.status_line.state == "connecting":
            self.status_line.ready(self.profile.chat_model)

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
        if len(text) > MAX_MESSAGE_CHARS:
            self.notify(
                f"Message too long ({len(text):,} characters; limit {MAX_MESSAGE_CHARS:,}). Nothing was sent.",
                severity="error",
            )
            return
        if self.conversation_id in self.turns:
            self.notify("A reply is still running here: wait, or press Esc to cancel it.", severity="warning")
            return
        if text in ("/help", "/new"):
            self.composer.clear()
            if text == "/help":
                await self.action_help()
            else:
                await self.action_new_conversation()
            return
        try:
            slash.parse(text)
        except slash.SlashError as exc:
            await self.chat_log.mount(ErrorCard(friendly("usage", str(exc))))
            return
        self.composer.remember(text)
        self.composer.clear()
        attachments, self.pending_attachments = self.pending_attachments, []
        self._show_pending()
        edit_of, self.editing = self.editing, None
        if self.chat_log.has_newer:  # scrolled up far (or jumped to a search hit): back to the end
            await self.chat_log.show_conversation(self.conversation_id)
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

        choice = await self.push_screen_wait(ApprovalScreen(tool, question))
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
