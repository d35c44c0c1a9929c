"""logs/mcp-NAME.log holds a server's stderr with its control characters made visible (issue 34
item 6): `cat` of the log must not set the terminal's title or write its clipboard."""

from __future__ import annotations

from mcp_helpers import HOSTILE_SERVER, server_command
from mcp_servers.hostile_server import HOSTILE

from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.mcp.connection import ServerConnection
from tui_agent.core.textsafe import visible


async def test_a_server_s_stderr_reaches_its_log_visible(env):
    command, args = server_command(HOSTILE_SERVER, "--stderr-exit")
    config = mcp_config.add_server(mcp_config.ServerConfig(name="loud", transport="stdio", command=command, args=args))
    connection = ServerConnection(config, env.vault.logs / "mcp-loud.log", 30)
    assert await connection.start() is False
    await connection.stop()
    text = connection.log_path.read_text(encoding="utf-8")
    assert f"fatal: {visible(HOSTILE)}" in text
    assert not any(ch in text for ch in "\x1b\x07\x9b\x9d\x9c")
    assert connection.error.startswith("the server exited while starting: fatal: T␛]0;PWNED-TITLE␇")
