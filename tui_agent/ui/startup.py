"""What the app does around its first frame: the warm-up thread, the client built in a worker, the
Footer, the endpoint check, the vault's trust question, and what waited for the paint. Held by
the app (``app.startup``); it gets the app's parts it uses as arguments."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from tui_agent.core import profiles
from tui_agent.ui import gc_tuning
from tui_agent.ui.errors import setup_text
from tui_agent.ui.widgets.bubbles import NoticeCard
from tui_agent.ui.widgets.key_footer import KeyFooter

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import Worker

    from tui_agent.core.llm import LLMClient
    from tui_agent.core.store.models import Profile
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.ui.conversation_view import ConversationView
    from tui_agent.ui.mcp_control import McpControl

log = logging.getLogger("tui_agent.ui")
FOOTER_LATEST_S = 1.0  # after the client, when a reply sent at once has no words yet


class Startup:
    """``app``: Textual's side of the app (workers, timers, screens, notifications); ``view``: the
    conversation view (its status line and log); ``profile``: the active profile; ``registry_found``:
    given the tools the preload built; ``freeze_gc``: whether to freeze what the preload imported;
    ``check_endpoint``: whether to ask the endpoint once the client is ready."""

    def __init__(
        self,
        app: App[Any],
        view: ConversationView,
        mcp: McpControl,
        *,
        profile: Callable[[], Profile],
        registry_found: Callable[[ToolRegistry | None], None],
        freeze_gc: Callable[[], bool],
        check_endpoint: Callable[[], bool],
    ) -> None:
        self.app = app
        self.view = view
        self.mcp = mcp
        self.profile = profile
        self.registry_found = registry_found
        self.freeze_gc = freeze_gc
        self.check_endpoint = check_endpoint
        self.preload: Worker[None] | None = None
        self.until_painted: list[Callable[[], object]] | None = []  # None once the first frame is drawn
        self.preload_done = asyncio.Event()
        self.llm_clients: dict[tuple[str, str, float, str], LLMClient] = {}
        from tui_agent.ui.settings_review import SettingsReview

        # Settings changed in the shared store: asked about once the vault is trusted (core.approvals).
        self.settings = SettingsReview(app, profile, self.settings_approved)

    def ask_about_trust(self) -> None:
        """A vault that came with the current folder: ask once whether to trust it (core.trust)."""
        from tui_agent.core import trust

        root = trust.untrusted_vault()
        if root is None:
            self.when_painted(self.settings.start)  # it reads the store: after the first frame
            return
        self.app.run_worker(self._ask_trust(str(root)), group="trust", exit_on_error=False)

    async def _ask_trust(self, root: str) -> None:
        from tui_agent.core import trust
        from tui_agent.core.store import worker
        from tui_agent.ui.screens.trust import TrustScreen

        try:  # what it would run reads the store: on the store's thread
            would = await worker.run(trust.what_it_would_do, self.profile())
        except Exception as exc:  # the store is away: the question still comes, without the list
            log.warning("cannot list what the vault would run: %s", exc)
            would = []
        self.app.push_screen(TrustScreen(root, would), callback=self.trust_answered)

    def trust_vault(self) -> None:
        """The command palette's "Trust this vault": the start-up question again (after "Not now")."""
        from tui_agent.core import trust

        if trust.untrusted_vault() is None:
            self.app.notify("This vault is trusted: you named it, it is your own, or you trusted it.", title="Vault")
        else:
            self.ask_about_trust()

    def trust_answered(self, trusted: bool | None) -> None:
        from tui_agent.core import trust
        from tui_agent.core.textsafe import visible

        root = trust.untrusted_vault()
        if root is None:
            return
        name = visible(str(root))
        if not trusted:
            self.app.notify(
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
            self.app.notify(visible(str(exc)), title="Vault not trusted", severity="error", markup=False)
            return
        trust.set_current(root, trusted=True)
        self.app.notify(f"Trusted {name}", title="Vault", markup=False)
        if self.view.status_line.state == "error":  # the key it held back: the next turn reads it
            self.view.status_line.ready(self.profile().chat_model)
        if self.preload_done.is_set():  # else the preload starts them when it is done
            self.mcp.start_in_background()
        self.settings.start()

    def settings_approved(self) -> None:
        """Values were approved in the dialog: what they held back goes now."""
        if self.view.status_line.state == "error":  # the key it held back: the next turn reads it
            self.view.status_line.ready(self.profile().chat_model)
        if self.preload_done.is_set():  # else the preload starts them when it is done
            self.mcp.start_in_background()

    def after_first_paint(self) -> None:
        from tui_agent.ui import warmup

        # First: a message sent at once waits for this import and nothing before it.
        warmup.start(hold_for_client=True)
        # The collector stays paused through the warm-up's imports (warmup.start paused it first):
        # what start-up built is frozen with them once the client is ready (_preload_finished).
        gc_tuning.resume(gc_tuning.STARTUP)
        self.preloaded()
        waiting, self.until_painted = self.until_painted or [], None
        for callback in waiting:
            callback()
        # The Footer follows the client (_preload_finished), or a reply sent at once, whose first
        # words come first: built now, it shared the core with the import they wait for.

    @property
    def painted(self) -> bool:
        """The first frame is on screen."""
        return self.until_painted is None

    def when_painted(self, callback: Callable[[], object]) -> None:
        """``callback`` once the first frame is on screen (at once if it is). Textual's "after
        refresh" is not that at start-up: a widget mounted with the first page can see its
        callbacks run before anything was laid out."""
        if self.until_painted is None:
            callback()
        else:
            self.until_painted.append(callback)

    async def mount_footer(self) -> None:
        # Deferred (a timer, call_later): the app may be closing by now, its screens already gone.
        # (An app stops running before it closes its screens: is_running is False from the start of
        # its shutdown.)
        app = self.app
        if not app.is_running or not app.screen_stack or not app.screen_stack[0].is_running:
            return
        main = app.screen_stack[0]
        for slot in main.query("#footer-slot"):
            await main.mount(KeyFooter(), after=slot)
            await slot.remove()
            main.refresh_bindings()  # the Footer shows keys once told that the bindings are ready

    def first_words_shown(self) -> None:
        """The first reply's first words are on screen (or its turn ended): what waited comes now."""
        from tui_agent.ui import warmup

        warmup.first_words_shown()
        self.app.call_later(self.mount_footer)

    async def client_ready(self) -> None:
        """Wait for the preload (started now if it was not): two threads importing openai at once
        can see a half-initialised module, so a turn builds nothing before it is done."""
        self.preloaded()
        await self.preload_done.wait()

    def preloaded(self) -> Worker[None]:
        if self.preload is None:
            from tui_agent.core.llm_errors import LLMError

            client: LLMClient | None = None
            try:
                client = self.llm_client()
            except (LLMError, profiles.ProfileError) as exc:  # the profile names an API key variable not set
                log.warning("no client yet: %s", exc)
                self.view.status_line.show(str(exc), state="error")  # each turn says it again, as an error card
            self.preload = self.app.run_worker(
                partial(self.preload_client, client), thread=True, exit_on_error=False, group="startup"
            )
        return self.preload

    def llm_client(self, profile: Profile | None = None) -> LLMClient:
        """One client per endpoint for the app's life: its connection stays open between turns
        (no new TCP and TLS handshake before each reply). ``profile``: the active one, if read."""
        from tui_agent.core.llm import LLMClient, resolve_api_key

        profile = profile or self.profile()
        key = (profile.base_url, resolve_api_key(profile), float(profile.request_timeout_s), profile.api_key_env)
        client = self.llm_clients.get(key)
        if client is None:
            client = self.llm_clients[key] = LLMClient.for_profile(profile)
        return client

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
            self.app.call_from_thread(self.preload_finished, registry)
        if self.check_endpoint() and not self.view.turns:  # a message already sent finds out for itself
            self.probe_endpoint()

    def preload_finished(self, registry: ToolRegistry | None) -> None:
        from tui_agent.ui import warmup

        log.info(
            "client ready (imports started %.2f s ago, took %.2f s)",
            time.time() - warmup.timings.get("started_at", time.time()),
            warmup.timings.get("request_s", 0.0),
        )
        self.registry_found(registry)
        if self.freeze_gc():
            from tui_agent.ui.gc_tuning import freeze_long_lived

            freeze_long_lived()  # openai's types, the tools: as long-lived as the modules frozen at start
        self.preload_done.set()
        if not self.view.turns:  # else after the reply's first words (first_words_shown), or a second
            self.app.call_later(self.mount_footer)
        else:
            self.app.set_timer(FOOTER_LATEST_S, self.mount_footer)
        self.mcp.start_in_background()

    def probe_endpoint(self) -> None:
        import httpx2  # openai's own HTTP library: imported already, nothing more to load

        from tui_agent.core import approvals, tls

        profile = self.profile()
        if not approvals.approved(approvals.endpoint(profile.base_url, profile.api_key_env, "base_url")):
            return  # not contacted before it is approved here (the dialog asks)
        try:
            # The run's TLS context (core/tls), not one built again: loading the CA bundle is ~45 ms.
            httpx2.get(profile.base_url.rstrip("/") + "/models", timeout=3.0, verify=tls.context())
        except httpx2.HTTPError:
            log.info("no endpoint answers at %s", profile.base_url)
            self.app.call_from_thread(self.show_setup_card, profile.base_url, profile.chat_model)
            return
        self.app.call_from_thread(self.endpoint_answered)
        self.know_models(profile)

    def know_models(self, profile: Profile) -> None:
        """What the server says of the profile's models, asked now (a worker thread, after the
        first paint): the first turn finds the window and capabilities known."""
        from tui_agent.core.models import catalog

        vault = self.view.vault
        try:
            catalog.load(vault)
            catalog.refresh(profile, vault, want=[profile.chat_model, profile.vision_model])
        except Exception:  # the turn asks for itself
            log.warning("asking %s about its models failed", profile.base_url, exc_info=True)

    def show_setup_card(self, base_url: str, chat_model: str) -> None:
        self.view.chat_log.mount(NoticeCard(setup_text(base_url, chat_model), classes="setup-card"))
        if self.view.status_line.state == "connecting":
            self.view.status_line.offline(base_url)

    def endpoint_answered(self) -> None:
        if self.view.status_line.state == "connecting":
            self.view.status_line.ready(self.profile().chat_model)
