"""The MCP servers of one app (or one ``ask``): start, restart, stop, and their tools in the registry.

The registry is the only thing the loop sees: a server's tools are registered while it is ready
and removed when it fails or dies, so the next request leaves them out. ``before_turn`` starts
again whatever failed or died.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.mcp.connection import ServerConnection
from tui_agent.core.mcp.tool import McpTool, tool_name
from tui_agent.core.store.models import Profile
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.mcp")
Notice = Callable[[str], None]


def route_sdk_logs() -> None:
    """The SDK logs (e.g. a server's garbage line, with a traceback) go to the vault log, never to
    the terminal the app draws on."""
    sdk = logging.getLogger("mcp")
    if sdk.propagate:
        sdk.propagate = False
        handlers = logging.getLogger("tui_agent").handlers or [logging.NullHandler()]
        for handler in handlers:
            sdk.addHandler(handler)


class McpManager:
    def __init__(self, vault: Vault, registry: ToolRegistry, notice: Notice | None = None) -> None:
        self.vault = vault
        self.registry = registry
        self.notice: Notice = notice or (lambda text: None)
        self.on_change: Callable[[], None] = lambda: None
        self.connections: dict[str, ServerConnection] = {}
        self._registered: set[str] = set()
        self._announced: dict[str, str] = {}  # server -> the failure already shown
        self._told_untrusted = False
        self._lock = asyncio.Lock()
        route_sdk_logs()

    def configure(
        self, profile: Profile, servers: list[mcp_config.ServerConfig] | None = None
    ) -> list[ServerConnection]:
        """Match the connections to the profile's enabled servers (``servers``: as read already);
        return the ones to stop."""
        servers = mcp_config.enabled_servers(profile) if servers is None else servers
        wanted = {config.name: config for config in servers}
        timeout = float(profile.mcp_timeout_s)
        obsolete = [c for name, c in self.connections.items() if name not in wanted or c.config != wanted[name]]
        for connection in obsolete:
            del self.connections[connection.name]
        for config in wanted.values():
            self.configure_one(config, timeout)
        return obsolete

    def configure_one(self, config: mcp_config.ServerConfig, timeout_s: float) -> ServerConnection:
        if (reason := self.withheld()) is not None:
            raise PermissionError(reason)  # the CLI refuses before this (`mcp test`); never a start
        connection = self.connections.get(config.name)
        if connection is None:
            connection = ServerConnection(config, self.vault.logs / f"mcp-{config.name}.log", timeout_s)
            connection.on_change = self._changed
            self.connections[config.name] = connection
        connection.timeout_s = timeout_s  # starting; a call may use the server's own timeout_s
        return connection

    def withheld(self) -> str | None:
        """Why no server may start in this process (an untrusted vault), or None."""
        from tui_agent.core import trust

        return trust.withheld("MCP servers are not started")

    async def start(self, profile: Profile) -> None:
        """Start every enabled server that is not running (the failed and the dead again too).
        In an untrusted vault none starts: the notice says so once. The servers are read on the
        store's thread."""
        from tui_agent.core.store import worker

        servers = await worker.run(mcp_config.enabled_servers, profile)
        if (reason := self.withheld()) is not None:
            if servers and not self._told_untrusted:
                self._told_untrusted = True
                self.notice(reason[0].upper() + reason[1:])
            return
        async with self._lock:
            obsolete = self.configure(profile, servers)
            self.sync()  # switched-off servers' tools go at once
            for connection in obsolete:
                await connection.stop()
            pending = [c for c in self.connections.values() if c.state != "ready" or not c.running]
            await asyncio.gather(*(c.start() for c in pending))
        self.sync()

    async def before_turn(self, profile: Profile) -> None:
        """Restart what failed or died, so the turn after a failure tries again."""
        await self.start(profile)

    async def restart(self, name: str) -> None:
        connection = self.connections.get(name)
        if connection is not None and self.withheld() is None:
            await connection.stop()
            self._announced.pop(name, None)
            await connection.start()
            self.sync()

    async def aclose(self) -> None:
        """Stop every server; their processes end with the session."""
        connections = list(self.connections.values())
        self.connections.clear()
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        self.sync()

    def states(self) -> dict[str, tuple[str, str]]:
        return {
            name: (c.state, c.error if c.state != "ready" else "; ".join(c.notes))
            for name, c in self.connections.items()
        }

    # -------------------------------------------------------------- registry
    def sync(self) -> None:
        """Register the ready servers' tools; namespace a name as ``server__tool`` only where it clashes."""
        for name in self._registered:
            self.registry.unregister(name)
        self._registered.clear()
        ready = [c for c in self.connections.values() if c.state == "ready"]
        counts: dict[str, int] = {}
        for connection in ready:
            for remote in connection.tools:
                counts[remote.name] = counts.get(remote.name, 0) + 1
        for connection in ready:
            for remote in connection.tools:
                clash = counts[remote.name] > 1 or tool_name(connection.name, remote.name, False) in self.registry
                name = tool_name(connection.name, remote.name, namespaced=clash)
                if name in self.registry:
                    log.warning("MCP tool %s of %s left out: the name %s is taken", remote.name, connection.name, name)
                    continue
                try:
                    self.registry.register(McpTool(connection, remote, name, connection.timeout_s))
                except ValueError as exc:
                    log.warning("MCP tool %s of %s left out: %s", remote.name, connection.name, exc)
                    continue
                self._registered.add(name)

    def tool_names(self, server: str) -> list[str]:
        out = []
        for name in self._registered:
            tool = self.registry.get(name)
            if isinstance(tool, McpTool) and tool.server == server:
                out.append(name)
        return sorted(out)

    def _changed(self, connection: ServerConnection) -> None:
        if connection.state in ("failed", "dead"):
            if self._announced.get(connection.name) != connection.error:
                self._announced[connection.name] = connection.error
                verb = "could not start" if connection.state == "failed" else "stopped"
                self.notice(
                    f"MCP server {connection.name} {verb}: {connection.error}. Its tools are left out; "
                    "it is started again on the next turn."
                )
        elif connection.state == "ready":
            self._announced.pop(connection.name, None)
        if connection.name in self.connections:
            self.sync()
        self.on_change()
