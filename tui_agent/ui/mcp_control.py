"""The app's side of MCP: start the servers after the first paint, restart before a turn, stop at exit.

Nothing here delays the first paint: the SDK is imported in a thread and the servers start in a
worker once the preload is done. SIGTERM and SIGHUP (a closed terminal, or the served browser
tab going away) end the app the normal way, so every server process is stopped.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_agent.core.mcp import config as mcp_config
    from tui_agent.core.mcp.manager import McpManager
    from tui_agent.ui.host import McpHost

log = logging.getLogger("tui_agent.ui")
TURN_WAIT_S = 10.0


def _import_sdk() -> None:
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


class McpControl:
    def __init__(self, app: McpHost) -> None:
        self.app = app
        self.manager: McpManager | None = None
        self._starting: asyncio.Task[None] | None = None
        self._closed = False  # the app has ended: nothing starts any more

    def install_signal_handlers(self) -> None:
        from tui_agent.ui import lifeline

        loop = asyncio.get_running_loop()
        if lifeline.attach(loop, self.app.exit):
            return  # the console script's SIGTERM/SIGHUP handlers end the app, with a deadline
        for signum in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(signum, self.app.exit)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests), or Windows
                pass

    def _manager(self) -> McpManager:
        if self.manager is None:
            from tui_agent.core.mcp.manager import McpManager

            self.manager = McpManager(self.app.vault, self.app.registry, notice=self._notice)
            self.manager.on_change = self._changed
        return self.manager

    def start_in_background(self, enabled: list[mcp_config.ServerConfig] | None = None) -> None:
        """After the preload: start the profile's enabled servers (nothing to do without any; they
        are read on the store's thread unless ``enabled`` are those read already). Nothing once
        :meth:`aclose` ran: a preload or a trust answer that ends after the app's end starts no task
        that the closed loop would drop while it waits."""
        if self._closed:
            return
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._start(enabled))

    async def _start(self, enabled: list[mcp_config.ServerConfig] | None) -> None:
        try:
            if enabled is None:
                enabled = await self._enabled()
            if not enabled and self.manager is None:
                return
            await asyncio.to_thread(_import_sdk)
            await self._manager().start(self.app.profile)
        except Exception:
            log.exception("MCP servers could not be started")

    async def before_turn(self) -> None:
        """Start again what failed or died (and what was switched on); wait for a start under way,
        at most ``TURN_WAIT_S``, so a hanging server cannot hold the conversation up for long."""
        manager = self.manager
        running = set(manager.connections) if manager is not None else set()
        broken = manager is not None and any(c.state != "ready" for c in manager.connections.values())
        enabled = await self._enabled()
        if broken or {c.name for c in enabled} != running:
            self.start_in_background(enabled)
        if self._starting is not None and not self._starting.done():
            await asyncio.wait({self._starting}, timeout=TURN_WAIT_S)

    async def _enabled(self) -> list[mcp_config.ServerConfig]:
        from tui_agent.core.mcp import config  # after the first paint: nothing of MCP is needed for it
        from tui_agent.core.store import worker
        from tui_agent.core.store.errors import STORE_FAILURES

        try:
            return await worker.run(config.enabled_servers, self.app.profile)
        except STORE_FAILURES as exc:  # the store away: none started now, tried again with the next turn
            log.warning("MCP servers not read: %s", exc)
            return []

    async def restart(self, name: str) -> None:
        await self._manager().restart(name)

    async def aclose(self) -> None:
        self._closed = True
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            await asyncio.gather(self._starting, return_exceptions=True)
        if self.manager is not None:
            await self.manager.aclose()

    def states(self) -> dict[str, tuple[str, str]]:
        return self.manager.states() if self.manager is not None else {}

    def _notice(self, text: str) -> None:
        self.app.notify(text, title="MCP", severity="warning", timeout=12)

    def _changed(self) -> None:
        from tui_agent.ui.widgets.sidebar_messages import McpStateChanged

        for widget in self.app.query("McpServerList"):
            widget.post_message(McpStateChanged())
