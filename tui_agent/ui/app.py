"""The full-screen app, only what is app-wide: key bindings and the palette, theme, sidebar, screens
(log, approval, image viewer), MCP's lifecycle, start-up (``startup``). The conversation on screen
(chat log, composer, turns, message actions) is its ``conversation_view`` (ui/conversation_view.py)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.widgets import Header, Static
from textual.worker import Worker

from tui_agent.core import profiles
from tui_agent.core.store import worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible
from tui_agent.core.vault import Vault
from tui_agent.ui import app_end, image_actions, text_guard, textual_fixes
from tui_agent.ui.app_actions import AppActions
from tui_agent.ui.chat_screen import ChatScreen
from tui_agent.ui.commands import HELP_EXTRA, AgentCommands, history_search
from tui_agent.ui.conversation_view import ConversationView
from tui_agent.ui.errors import store_unavailable
from tui_agent.ui.gc_tuning import IdleCollector
from tui_agent.ui.host import ViewDeps
from tui_agent.ui.input_turn import PromptInput
from tui_agent.ui.mcp_control import McpControl
from tui_agent.ui.paths import styles_dir
from tui_agent.ui.startup import Startup
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.sidebar_messages import ConversationsAction, ConversationSelected, ProfileChanged

if TYPE_CHECKING:
    from textual.widget import Widget

    from tui_agent.core.llm import LLMClient
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.ui.live_updates import LiveUpdates
    from tui_agent.ui.widgets.host import WidgetHost

log = logging.getLogger("tui_agent.ui")


class AgentApp(AppActions, PromptInput, App[None]):
    TITLE = "tui-agent"
    CSS_PATH = [styles_dir() / "app.tcss"]
    COMMANDS = App.COMMANDS | {AgentCommands, history_search}
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
        self._profile: Profile | None = None
        profiles.set_run_profile(profile_name or None)  # this run only; `profile use` switches for good
        self._images_choice = images
        self._image_class: type | None = None
        self.check_endpoint = check_endpoint  # the endpoint is asked once the client is ready
        self._tool_registry = registry
        self.clock = clock
        self.live_motion = animate
        self.thinking_hidden = False  # every thinking block hidden (Ctrl+G): widgets/thinking.toggle_all
        self.freeze_gc_after_preload = False  # set by run_app: tests keep the collector as it is
        self.idle_gc = IdleCollector(self)  # full collections between replies, not during them
        self.always_approve = False
        self._cell_check_due = False  # a resize before the first frame: the cell is asked after it
        self.mcp = McpControl(self)
        # The conversation on screen: it gets what it needs of the app as callables (ui/host.ViewDeps).
        self.conversation_view = ConversationView(
            ViewDeps(
                vault=vault,
                clock=clock,
                profile=lambda: self.profile,
                reload_profile=self.reload_profile,
                registry=lambda: self.registry,
                llm_client=self.llm_client,
                client_ready=self.client_ready,
                before_turn=self.mcp.before_turn,
                approve=self.approve,
                first_words_shown=self.first_words_shown,
                input_seen=self.idle_gc.input_seen,
                turn_ended=self.idle_gc.turn_ended,
                help_keys=self.help_keys,
                show_title=self._show_title,
            ),
            id="chat-column",
        )
        # Around the first frame: the warm-up, the client, the Footer, the endpoint check, trust.
        self.startup = Startup(
            self,
            self.conversation_view,
            self.mcp,
            profile=lambda: self.profile,
            registry_found=self._registry_found,
            freeze_gc=lambda: self.freeze_gc_after_preload,
            check_endpoint=lambda: self.check_endpoint,
        )

    # ----------------------------------------------------------------- layout
    def typing_target(self) -> Widget:
        return self.conversation_view.composer

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            yield self.conversation_view  # the sidebar is mounted before it at Ctrl+B
        # The Footer is built right after the first paint (_after_first_paint): it recomposes its
        # keys on every bindings change at start-up (focus, screen), a third of the first paint.
        yield Static(id="footer-slot")

    def get_default_screen(self) -> ChatScreen:
        return ChatScreen(id="_default")  # focus goes back to the composer whenever it resumes

    @property
    def conversation_id(self) -> int | None:
        """The conversation on screen (the sidebar marks it)."""
        return self.conversation_view.conversation_id

    @property
    def turns(self) -> dict[int | None, Worker[None]]:
        """The replies running, one per conversation (the idle collector waits for them)."""
        return self.conversation_view.turns

    def store_seems_away(self, where: str) -> None:
        """The store's server did not answer (the live updates found it): wait for it, as after a
        failed call, unless the app waits already."""
        view = self.conversation_view
        if not view.outage.away:
            view.store_away(None, where)

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
        """The active profile as last read (at start-up, before each turn, when it was changed)."""
        if self._profile is None:  # before the first paint's reads (a test's own code)
            self._profile = profiles.active_profile()
        return self._profile

    async def reload_profile(self) -> Profile:
        """The active profile read again, on the store's thread."""
        from tui_agent.ui.first_read import active_profile

        self._profile = await worker.run(active_profile)
        return self._profile

    async def on_mount(self) -> None:
        from tui_agent.ui.first_read import first_read
        from tui_agent.ui.themes import apply_saved_theme

        # Everything the first paint needs of the store, in one call on the store's thread.
        first = await worker.run(first_read)
        self._profile = first.profile
        apply_saved_theme(self, first.theme)
        # The status first: opening the conversation then leaves a "connecting" line as it is.
        profile = self.profile
        view = self.conversation_view
        if self.check_endpoint:
            view.status_line.connecting(profile.base_url)
        else:
            view.status_line.ready(profile.chat_model)
        # Not stored again: next start finds the same one (a write transaction saved on the first paint).
        await view.open_conversation(first.conversation_id, remember=False, page=first.page)
        from tui_agent.core.store import changes

        self.live_updates: LiveUpdates | None = None
        if changes.origin() is not None:  # PostgreSQL: what other machines store shows here as it comes
            from tui_agent.ui.live_updates import follow  # (not imported for a SQLite store)

            self.live_updates = follow(self)
        view.composer.focus()
        self.startup.ask_about_trust()  # a ./jj_vault not trusted yet: the dialog comes over the chat
        self.mcp.install_signal_handlers()
        log.info("chat screen ready (pid %d)", os.getpid())
        # The openai import (~0.5-1 s) starts right after the first frame, so a message sent at once
        # waits as little as possible for it (run.py may have started it even earlier).
        self.call_after_refresh(self._after_first_paint)

    def _after_first_paint(self) -> None:
        self.startup.after_first_paint()

    # ------------------------------------------------ app-wide panels and keys
    async def action_toggle_sidebar(self) -> None:
        """The sidebar is built (and imported) on first use: it is not needed for the first paint."""
        from tui_agent.ui.widgets.sidebar import Sidebar

        existing = self.query(Sidebar)
        if existing:
            sidebar = existing.first()
            sidebar.display = not sidebar.display
            if not sidebar.display:
                self.conversation_view.composer.focus()  # never leave focus in a hidden field
            return
        from tui_agent.ui.widgets.sidebar import read_sidebar

        try:
            data = await worker.run(read_sidebar)  # on the store's thread; the screen goes on meanwhile
        except STORE_FAILURES as exc:
            self.notify(store_unavailable(exc), severity="error")
            return
        if not self.query(Sidebar):  # (Ctrl+B twice while it was read)
            await self.query_one("#main").mount(Sidebar(data, id="sidebar"), before=0)

    @on(ProfileChanged)
    async def _profile_changed(self) -> None:
        profile = await self.reload_profile()
        if self.conversation_view.query("#status"):  # (a field saved as the app ends: the view is gone)
            self.conversation_view.status_line.ready(profile.chat_model)

    @on(ConversationSelected)
    async def _conversation_selected(self, event: ConversationSelected) -> None:
        if event.conversation_id != self.conversation_id:
            await self.conversation_view.open_conversation(event.conversation_id)

    @on(ConversationsAction)
    async def _conversation_action(self, event: ConversationsAction) -> None:
        await self.run_action(
            {"new": "new_conversation", "rename": "rename_conversation", "delete": "delete_conversation"}[event.action]
        )

    def action_toggle_thinking(self) -> None:
        from tui_agent.ui.widgets.thinking import toggle_all

        toggle_all(self)

    def action_show_log(self) -> None:
        from tui_agent.ui.screens.log_screen import LogScreen

        self.push_screen(LogScreen(self.vault.log_file))

    @on(ImageCarousel.OpenRequested)
    async def _open_image(self, event: ImageCarousel.OpenRequested) -> None:
        await image_actions.open_full_size(self.conversation_view, event)  # the viewer is a screen of the app

    def help_keys(self) -> str:
        keys = (f"{b.key:<10} {b.description}" for b in self.BINDINGS if isinstance(b, Binding))
        return "\n".join(keys) + f"\n{HELP_EXTRA}"

    # ----------------------------------------------------- start-up (ui/startup)
    def when_painted(self, callback: Callable[[], object]) -> None:
        """``callback`` once the first frame is on screen (at once if it is)."""
        self.startup.when_painted(callback)

    def first_words_shown(self) -> None:
        self.startup.first_words_shown()

    async def client_ready(self) -> None:
        await self.startup.client_ready()

    def llm_client(self, profile: Profile | None = None) -> LLMClient:
        return self.startup.llm_client(profile)

    def _registry_found(self, registry: ToolRegistry | None) -> None:
        if self._tool_registry is None:
            self._tool_registry = registry  # else the property builds it on first use

    def action_trust_vault(self) -> None:
        self.startup.trust_vault()

    def action_approve_settings(self) -> None:
        self.startup.settings.start(tell_if_none=True)

    async def action_choose_model(self) -> None:
        from tui_agent.ui.model_choice import choose_model

        await choose_model(self, self.vault)

    def on_resize(self) -> None:
        """A resize may come with another cell size (a tmux client attached): images follow it. One
        before the first frame (Textual's own at start, or a client attached meanwhile) is looked at
        once the frame is drawn: the thread that asks is not the first paint's."""
        if self.startup.painted:
            self._follow_cell()
        elif not self._cell_check_due:
            self._cell_check_due = True
            self.startup.when_painted(self._follow_cell)

    def _follow_cell(self) -> None:
        from tui_agent.ui.cell_follow import follow_cell

        self.run_worker(follow_cell(self), group="cell", exit_on_error=False)

    async def on_unmount(self) -> None:
        self.idle_gc.end_hold()  # the collector's thresholds as they were (tests run many apps in one process)
        clients = [client.close for client in self.startup.llm_clients.values()]
        # every MCP server process ends with the app
        await app_end.ended(list(self.turns.values()), [self.mcp.aclose, *clients])

    async def approve(self, tool: str, question: str) -> bool:
        if self.always_approve:
            return True
        from tui_agent.ui.screens.dialogs import ApprovalScreen

        status = self.conversation_view.status_line
        status.awaiting_approval(tool)  # not "running": nothing runs until the user answers
        choice = await self.push_screen_wait(ApprovalScreen(tool, question))
        status.tool_running(tool)
        if choice == "always":
            self.always_approve = True
        return choice in ("yes", "always")

    async def _show_title(self, title: str, always: bool) -> None:
        """The conversation view's title in the header; the sidebar's list again if it changed."""
        if always or title != self.sub_title:
            self.sub_title = title
            for conversations in self.query("ConversationList"):
                await conversations.reload(self.conversation_id)  # type: ignore[attr-defined]

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

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (ours and Textual's text selection) goes every way available, and says which."""
        from tui_agent.core.textsafe import clipboard_text
        from tui_agent.ui.clipboard import copy_text
        from tui_agent.ui.terminal_probe import served_in_browser

        self._clipboard = clipboard_text(text)
        driver = self._driver
        report = copy_text(text, driver.write if driver is not None else None)
        message = report.message()
        if served_in_browser() and report.arrived:
            message = message.replace("terminal (OSC 52)", "browser clipboard")
        self.notify(message, severity="information" if report.arrived else "error")


if TYPE_CHECKING:

    def _gives_widgets_what_they_read(app: AgentApp) -> WidgetHost:
        return app  # mypy: AgentApp is a WidgetHost (widgets/host.py)
