"""What the app does once its first frame is drawn: the warm-up thread, the client built in a
worker, the Footer, the endpoint check, and what waited for the paint. Mixed into the app (above
the panel actions)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import App
from textual.widgets import Footer
from textual.worker import Worker

from tui_agent.core import profiles
from tui_agent.ui import gc_tuning
from tui_agent.ui.errors import setup_text
from tui_agent.ui.widgets.bubbles import NoticeCard

if TYPE_CHECKING:
    from tui_agent.core.llm import LLMClient
    from tui_agent.core.store.models import Profile
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.ui.conversation_view import ConversationView
    from tui_agent.ui.mcp_control import McpControl

log = logging.getLogger("tui_agent.ui")
FOOTER_LATEST_S = 1.0  # after the client, when a reply sent at once has no words yet


class StartupMixin(App[None]):
    """The base of AgentApp (above PanelActionsMixin); AgentApp.__init__ sets these."""

    check_endpoint: bool
    freeze_gc_after_preload: bool
    mcp: McpControl
    _tool_registry: ToolRegistry | None
    _preload: Worker[None] | None
    _until_painted: list[Callable[[], object]] | None
    _preload_done: asyncio.Event
    _llm_clients: dict[tuple[str, str, float, str], LLMClient]

    conversation_view: ConversationView

    if TYPE_CHECKING:

        @property
        def profile(self) -> Profile: ...
        @property
        def turns(self) -> dict[int | None, Worker[None]]: ...

    def ask_about_trust(self) -> None:
        """A vault that came with the current folder: ask once whether to trust it (core.trust)."""
        from tui_agent.core import trust

        root = trust.untrusted_vault()
        if root is None:
            return
        from tui_agent.ui.screens.trust import TrustScreen

        would = trust.what_it_would_do(self.profile)
        self.push_screen(TrustScreen(str(root), would), callback=self._trust_answered)

    def action_trust_vault(self) -> None:
        """The command palette's "Trust this vault": the start-up question again (after "Not now")."""
        from tui_agent.core import trust

        if trust.untrusted_vault() is None:
            self.notify("This vault is trusted: you named it, it is your own, or you trusted it.", title="Vault")
        else:
            self.ask_about_trust()

    def _trust_answered(self, trusted: bool | None) -> None:
        from tui_agent.core import trust
        from tui_agent.core.textsafe import visible

        root = trust.untrusted_vault()
        if root is None:
            return
        name = visible(str(root))
        if not trusted:
            self.notify(
                f"Not trusted: no MCP server, no image command, no API key this run. Later: tui-agent vault trust "
                f"{name}",
                title="Vault",
                timeout=10,
                markup=False,
            )
            return
        try:
            trust.trust(root)
        except trust.TrustStoreError as exc:
            self.notify(visible(str(exc)), title="Vault not trusted", severity="error", markup=False)
            return
        trust.set_current(root, trusted=True)
        self.notify(f"Trusted {name}", title="Vault", markup=False)
        if self.conversation_view.status_line.state == "error":  # the key it held back: the next turn reads it
            self.conversation_view.status_line.ready(self.profile.chat_model)
        if self._preload_done.is_set():  # else the preload starts them when it is done
            self.mcp.start_in_background()

    def on_resize(self) -> None:
        """A resize may come with another cell size (a tmux client attached): images follow it."""
        from tui_agent.ui.cell_follow import follow_cell

        self.run_worker(follow_cell(self), group="cell", exit_on_error=False)

    def _after_first_paint(self) -> None:
        from tui_agent.ui import warmup

        # First: a message sent at once waits for this import and nothing before it.
        warmup.start(hold_for_client=True)
        # The collector stays paused through the warm-up's imports (warmup.start paused it first):
        # what start-up built is frozen with them once the client is ready (_preload_finished).
        gc_tuning.resume(gc_tuning.STARTUP)
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

    async def client_ready(self) -> None:
        """Wait for the preload (started now if it was not): two threads importing openai at once
        can see a half-initialised module, so a turn builds nothing before it is done."""
        self._preloaded()
        await self._preload_done.wait()

    def _preloaded(self) -> Worker[None]:
        if self._preload is None:
            from tui_agent.core.llm_errors import LLMError

            client: LLMClient | None = None
            try:
                client = self.llm_client()
            except (LLMError, profiles.ProfileError) as exc:  # the profile names an API key variable not set
                log.warning("no client yet: %s", exc)
                self.conversation_view.status_line.show(
                    str(exc), state="error"
                )  # each turn says it again, as an error card
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
            self.call_from_thread(self._show_setup_card, profile.base_url, profile.chat_model)
            return
        self.call_from_thread(self._endpoint_answered)

    def _show_setup_card(self, base_url: str, chat_model: str) -> None:
        self.conversation_view.chat_log.mount(NoticeCard(setup_text(base_url, chat_model), classes="setup-card"))
        if self.conversation_view.status_line.state == "connecting":
            self.conversation_view.status_line.offline(base_url)

    def _endpoint_answered(self) -> None:
        if self.conversation_view.status_line.state == "connecting":
            self.conversation_view.status_line.ready(self.profile.chat_model)
