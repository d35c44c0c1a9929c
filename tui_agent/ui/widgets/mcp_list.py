"""The sidebar's MCP section: each server with its state and a switch (on/off for the active profile)."""

from __future__ import annotations

import re

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Static, Switch

from tui_agent.core import profiles
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store import worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.textsafe import visible
from tui_agent.ui.errors import store_unavailable
from tui_agent.ui.widgets.host import host_of
from tui_agent.ui.widgets.sidebar_messages import McpStateChanged

STATE_TEXT = {
    "ready": "ready",
    "starting": "starting…",
    "failed": "failed",
    "dead": "stopped working",
    "stopped": "off",
}


def _widget_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


class McpServerList(Vertical):
    DEFAULT_CSS = """
    McpServerList { height: auto; padding: 0 0 1 0; }
    McpServerList .mcp-row { height: auto; }
    McpServerList Switch { border: none; padding: 0 1; height: 1; }
    McpServerList Switch:focus { border: none; text-style: reverse; }
    McpServerList .mcp-state { padding: 0 1; width: 1fr; }
    McpServerList .mcp-state.-failed { color: $error; }
    McpServerList .mcp-empty { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, servers: list[mcp_config.ServerConfig], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.servers = servers  # as last read (on the store's thread)

    def compose(self) -> ComposeResult:
        yield Label("MCP servers", classes="sidebar-title")
        servers = self.servers
        if not servers:
            yield Static("none yet: tui-agent mcp add NAME -- COMMAND", classes="mcp-empty", markup=False)
        states = self._states()
        for server in servers:
            key = _widget_id(server.name)
            with Horizontal(classes="mcp-row"):
                tooltip = visible(server.describe())
                yield Switch(value=server.enabled, id=f"mcp-switch-{key}", name=server.name, tooltip=tooltip)
                yield Static(self._text(server, states), id=f"mcp-state-{key}", classes="mcp-state", markup=False)

    def on_mount(self) -> None:
        self.refresh_states()

    def _states(self) -> dict[str, tuple[str, str]]:
        control = host_of(self.app).mcp
        return control.states() if control is not None else {}

    def _text(self, server: mcp_config.ServerConfig, states: dict[str, tuple[str, str]]) -> str:
        """The row's text: the error quotes the server (its stderr line): shown, never acted on."""
        return visible(self._plain_text(server, states))

    def _plain_text(self, server: mcp_config.ServerConfig, states: dict[str, tuple[str, str]]) -> str:
        if not server.enabled:
            return f"{server.name} · off"
        state, error = states.get(server.name, ("stopped", ""))
        text = f"{server.name} · {STATE_TEXT.get(state, state) if state != 'stopped' else 'on'}"
        return f"{text}: {error}" if error and state in ("failed", "dead", "ready") else text

    def refresh_states(self) -> None:
        states = self._states()
        for server in self.servers:
            found = self.query(f"#mcp-state-{_widget_id(server.name)}")
            if found:
                label = found.first(Static)
                label.update(self._text(server, states))
                state = states.get(server.name, ("", ""))[0]
                label.set_class(server.enabled and state in ("failed", "dead"), "-failed")

    @on(McpStateChanged)
    def _state_changed(self, event: McpStateChanged) -> None:
        event.stop()
        self.refresh_states()

    @on(Switch.Changed)
    async def _toggled(self, event: Switch.Changed) -> None:
        event.stop()
        name = event.switch.name or ""
        try:
            self.servers = await worker.run(_set_enabled, name, event.value)
        except STORE_FAILURES as exc:
            self.notify(store_unavailable(exc), severity="error")
            return
        self.notify(f"MCP server {name} {'on' if event.value else 'off'} for this profile", timeout=3)
        control = host_of(self.app).mcp
        if control is not None:
            control.start_in_background()
        self.refresh_states()


def _set_enabled(name: str, enabled: bool) -> list[mcp_config.ServerConfig]:
    """Switch server ``name`` for the active profile; the servers as they are now."""
    profile = profiles.active_profile()
    mcp_config.set_enabled(name, enabled, profile)
    return mcp_config.list_servers(profile)
