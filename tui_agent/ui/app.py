"""The full-screen app: chat log, composer, status line, sidebar; the core loop runs in workers."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Collapsible, Footer, Header, Static
from textual.worker import Worker, WorkerState, get_current_worker

from tui_agent.core import profiles, slash
from tui_agent.core.events import TurnStarted
from tui_agent.core.loop import MAX_MESSAGE_CHARS
from tui_agent.core.store import history
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible
from tui_agent.core.tools.registry import ToolRegistry, default_registry
from tui_agent.core.vault import Vault
from tui_agent.ui.commands import AgentCommands, HistorySearch
from tui_agent.ui.errors import friendly, setup_text
from tui_agent.ui.mcp_control import McpControl
from tui_agent.ui.message_actions import MessageActionsMixin
from tui_agent.ui.paths import styles_dir
from tui_agent.ui.turn_view import TurnView
from tui_agent.ui.widgets.bubbles import ErrorCard, NoticeCard
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.chat_log import ChatLog
from tui_agent.ui.widgets.composer import Composer, SlashHints
from tui_agent.ui.widgets.context_meter import ContextMeter
from tui_agent.ui.widgets.sidebar_messages import ProfileChanged
from tui_agent.ui.widgets.status import StatusLine

log = logging.getLogger("tui_agent.ui")


class AgentApp(MessageActionsMixin):
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
        super().__init__()
        self.vault = vault
        profiles.set_run_profile(profile_name or None)  # this run only; `profile use` switches for good
        self._images_choice = images
        self._image_class: type | None = None
        self.check_endpoint = check_endpoint
        self._tool_registry = registry
        self._preload: Worker[None] | None = None
        self._preload_done = asyncio.Event()
        self.clock = clock
        self.live_motion = animate
        self.conversation_id: int | None = None
        self.turns: dict[int | None, Worker[None]] = {}
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
                yield SlashHints(id="slash-hints")
                yield Composer(id="composer")
        yield Footer()

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
            self._tool_registry = default_registry()
        return self._tool_registry

    @property
    def profile(self) -> Profile:
        return profiles.active_profile()

    async def on_mount(self) -> None:
        from tui_agent.ui.themes import apply_saved_theme

        apply_saved_theme(self)
        last = history.last_conversation()
        await self.open_conversation(last.id if last else None)
        self.composer.focus()
        if self.check_endpoint:
            self.status_line.connecting(self.profile.base_url)
        else:
            self.status_line.ready(self.profile.chat_model)
        self.mcp.install_signal_handlers()
        log.info("chat screen ready (pid %d)", os.getpid())
        # Background work starts well after the first paint so it does not compete with it for the GIL.
        self.set_timer(1.0, self._after_first_paint)

    def _after_first_paint(self) -> None:
        self._preloaded()

    def _preloaded(self) -> Worker[None]:
        if self._preload is None:
            self._preload = cast("Worker[None]", self.preload_client())
        return self._preload

    @work(thread=True, exit_on_error=False, group="startup")
    def preload_client(self) -> None:
        """After the first paint, in one thread (concurrent imports of one package can see it half
        initialised): import openai, build the tools, then check that the endpoint answers."""
        try:
            import httpx  # noqa: F401
            import openai

            # The client imports more on construction (httpx URL handling): do it here too, so that
            # no import is left for the event loop to race with the endpoint probe below.
            openai.AsyncOpenAI(base_url="http://127.0.0.1/v1", api_key="preload", max_retries=0)
        finally:
            self.call_from_thread(self._preload_finished)
        if self.check_endpoint:
            self.probe_endpoint()

    def _preload_finished(self) -> None:
        self.registry  # noqa: B018 - builds the tool registry on the event loop
        self._preload_done.set()
        self.mcp.start_in_background()

    def probe_endpoint(self) -> None:
        import httpx

        profile = self.profile
        try:
            httpx.get(profile.base_url.rstrip("/") + "/models", timeout=3.0)
        except httpx.HTTPError:
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
    def _composer_changed(self) -> None:
        self.query_one(SlashHints).show(self.composer.matches())

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
        if self.chat_log.has_newer:  # a search jump left newer pages unloaded: the reply goes at the end
            await self.chat_log.show_conversation(self.conversation_id)
        self.composer.remember(text)
        self.composer.clear()
        attachments, self.pending_attachments = self.pending_attachments, []
        self._show_pending()
        edit_of, self.editing = self.editing, None
        self.turns[self.conversation_id] = self.run_turn(self.conversation_id, text, attachments, edit_of=edit_of)

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
    ) -> None:
        """One turn on screen: a new message, an edited one (``edit_of``: the conversation forks
        there), another answer in place of reply ``regenerate``, or the failed last turn again."""
        from tui_agent.core.llm import LLMError
        from tui_agent.core.loop import AgentLoop

        view = TurnView(self, conversation_id)
        started = retry or regenerate is not None  # until the user's message is stored, a failure gives the text back
        # Two threads importing openai at once can see a half-initialised module: wait for the preload.
        self._preloaded()
        await self._preload_done.wait()
        await self.mcp.before_turn()
        try:
            loop = AgentLoop(self.vault, self.profile, self.registry, approve=self.approve)
            try:
                if regenerate is not None:
                    events = loop.regenerate(regenerate)
                elif retry and conversation_id:
                    events = loop.retry_turn(conversation_id)
                else:
                    events = loop.run_turn(conversation_id, text, attachments, edit_of=edit_of)
                async for event in events:
                    await view.handle(event)
                    if isinstance(event, TurnStarted):
                        started = True
            finally:
                await loop.aclose()
        except asyncio.CancelledError:
            await view.close_bubble("cancelled")
            self.status_line.show("cancelled", state="error")
            raise
        except (LLMError, profiles.ProfileError) as exc:
            kind = getattr(exc, "kind", "model")
            await view._mount(ErrorCard(friendly(kind, str(exc))))
        finally:
            if not started:
                # Nothing was stored (a bad /attach, say): nothing is lost, the text goes back.
                if not self.composer.text:
                    self.composer.load_text(text)
                    self.composer.move_cursor(self.composer.document.end)
                self.pending_attachments = attachments + self.pending_attachments
                self._show_pending()
            me = get_current_worker()
            for key in {conversation_id, view.conversation_id}:
                if self.turns.get(key) is me:
                    del self.turns[key]
            if not view.attached and view.conversation_id == self.conversation_id:
                await self.chat_log.show_conversation(self.conversation_id)

    async def on_unmount(self) -> None:
        profiles.set_run_profile(None)  # --profile was for this run of the app only
        await self.mcp.aclose()  # every MCP server process ends with the app

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
        elif self.query_one(SlashHints).has_class("-visible"):
            self.composer.clear()

    # ------------------------------------------------------- other actions
    async def action_toggle_sidebar(self) -> None:
        """The sidebar is built (and imported) on first use: it is not needed for the first paint."""
        from tui_agent.ui.widgets.sidebar import Sidebar

        existing = self.query(Sidebar)
        if existing:
            sidebar = existing.first()
            sidebar.display = not sidebar.display
            if not sidebar.display:
                self.composer.focus()  # never leave focus in a hidden field
            return
        await self.query_one("#main").mount(Sidebar(id="sidebar"), before=0)

    @on(ProfileChanged)
    def _profile_changed(self) -> None:
        self.status_line.ready(self.profile.chat_model)

    def action_toggle_thinking(self) -> None:
        from tui_agent.ui.widgets.thinking import toggle_all

        toggle_all(self)

    def action_toggle_tools(self) -> None:
        from tui_agent.ui.widgets.thinking import ThinkingBlock

        blocks = [b for b in self.chat_log.query(Collapsible) if not isinstance(b, ThinkingBlock)]
        expand = any(block.collapsed for block in blocks)
        for block in blocks:
            block.collapsed = not expand

    def action_attach(self) -> None:
        from tui_agent.ui.screens.dialogs import AttachScreen

        def chosen(source: str | None) -> None:
            if source:
                self.attach(source)

        self.push_screen(AttachScreen(Path.cwd()), chosen)

    @work(group="attach", exit_on_error=False)
    async def attach(self, source: str) -> None:
        from tui_agent.core.attachments import AttachmentError, import_image

        try:
            relative = await import_image(self.vault, source)
        except AttachmentError as exc:
            await self.chat_log.mount(ErrorCard(friendly("attachment", str(exc))))
            return
        self.pending_attachments.append(relative)
        self._show_pending()
        self.composer.focus()

    def _show_pending(self) -> None:
        pending = self.query_one("#pending-attachments", Static)
        pending.update(visible("📎 " + ", ".join(self.pending_attachments)) if self.pending_attachments else "")
        pending.display = bool(self.pending_attachments)

    def action_show_log(self) -> None:
        from tui_agent.ui.screens.log_screen import LogScreen

        self.push_screen(LogScreen(self.vault.log_file))

    async def action_help(self) -> None:
        keys = "\n".join(
            f"{binding.key:<10} {binding.description}" for binding in self.BINDINGS if isinstance(binding, Binding)
        )
        extra = (
            "ctrl+p     Command palette (also: search history)\n"
            "left/right Previous/next image (carousel focused)\n"
            "o          Open the image full size\n"
            "\nMessages (Up on an empty composer, or Alt+Up, or a click)\n"
            "up/down    Move the message cursor; down past the last returns to the composer\n"
            "enter      The message's actions (copy a code block, export, ...)\n"
            "c          Copy the message (its Markdown source)\n"
            "p          Copy it into the composer\n"
            "r          Regenerate a reply (earlier answers stay: left/right)\n"
            "e          Edit one of your messages and resend it (the old branch stays)\n"
            "left/right Previous/next alternative or branch\n"
            "escape     Back to the composer (also: stop editing)\n"
            "ctrl+up    Recall earlier messages into the composer"
        )
        await self.chat_log.mount(NoticeCard(f"Slash commands\n{slash.help_text()}\n\nKeys\n{keys}\n{extra}"))

    def action_open_image(self) -> None:
        """Open the focused carousel's image full size, else the newest image on screen."""
        focused = self.focused
        carousels = list(self.chat_log.query(ImageCarousel))
        carousel = focused if isinstance(focused, ImageCarousel) else (carousels[-1] if carousels else None)
        if carousel is None:
            self.notify("No image in this conversation yet.")
            return
        carousel.action_open()

    def _focused_or_newest_image(self) -> Path | None:
        focused = self.focused
        carousels = list(self.chat_log.query(ImageCarousel))
        carousel = focused if isinstance(focused, ImageCarousel) else (carousels[-1] if carousels else None)
        if carousel is None:
            self.notify("No image in this conversation yet.")
            return None
        return carousel.current

    def action_download_image(self) -> None:
        """Download the focused carousel's image, else the newest one (the browser saves the file)."""
        from tui_agent.ui.served_images import download_image

        if (path := self._focused_or_newest_image()) is not None:
            download_image(self, path)

    def action_open_gallery(self) -> None:
        """In a browser (serve): a tab with this conversation's images, full size, left/right to page."""
        from tui_agent.ui.served_images import open_gallery

        if (path := self._focused_or_newest_image()) is not None:
            open_gallery(self, self.vault, self.conversation_id, path)

    @on(ImageCarousel.OpenRequested)
    def _open_image(self, event: ImageCarousel.OpenRequested) -> None:
        from tui_agent.ui.image_open import open_full_size

        shown = [p for carousel in self.chat_log.query(ImageCarousel) for p in carousel.paths]
        open_full_size(self, event.path, list(dict.fromkeys(shown)) or event.paths)
