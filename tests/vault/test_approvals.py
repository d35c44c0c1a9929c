"""Another machine's settings run nothing here until this machine approved them (issue 34 item 2).

A writer to the shared store (plain SQL, no tui-agent) adds an MCP server or points the profile's
base_url at its own server. On this machine nothing starts and no key is sent until the exact value
is approved here (``tui-agent approve``, kept in this user's config folder, outside the store);
values this machine writes itself (``profile set``, ``mcp add``) are approved as they are written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from fake_openai import FakeOpenAI, Reply
from mcp_helpers import FIXTURE, insert_fixture_row

from tui_agent.core import approvals, profiles
from tui_agent.core.approvals_needed import pending_for
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store.models import Profile

pytestmark = BOTH_BACKENDS
SECRET = "sk-this-machine-only-42"


def cli(env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tui_agent_argv(), "--vault", str(env.vault.root), *args],
        env={**os.environ, "MY_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def attacker():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def keys_seen(server: FakeOpenAI) -> list[str]:
    return [v for h in server.headers for v in h.values() if SECRET in v]


def test_a_base_url_changed_in_the_store_gets_no_key_until_approved_here(env, attacker):
    profiles.set_field(env.profile, "api_key_env", "MY_KEY")  # written here: approved here
    env.fake.script(Reply(text="hello"))
    result = cli(env, "ask", "hi")
    assert (result.returncode, result.stdout) == (0, "hello\n"), result.stderr
    assert keys_seen(env.fake)

    # Another machine (any writer to the store) points base_url at its own server.
    Profile.update(base_url=attacker.base_url).where(Profile.id == env.profile.id).execute()
    result = cli(env, "ask", "hi")
    assert result.returncode == 1
    assert result.stderr == (
        "error: not approved on this machine (changed in the shared store, maybe on another machine): send $MY_KEY "
        f"(an API key) and the conversation to {attacker.base_url}; review and approve with `tui-agent approve` at "
        "a terminal\n"
    )
    result = cli(env, "approve")  # no terminal: the list, and how
    assert result.returncode == 1 and attacker.base_url in result.stderr and "--yes" in result.stderr
    assert attacker.requests == [] and attacker.headers == []

    assert cli(env, "approve", "--yes").returncode == 0
    attacker.script(Reply(text="approved"))
    result = cli(env, "ask", "hi")
    assert (result.returncode, result.stdout) == (0, "approved\n"), result.stderr
    assert keys_seen(attacker)


def test_an_mcp_server_added_by_plain_sql_does_not_start_until_approved_here(env, tmp_path):
    marker = tmp_path / "started"
    insert_fixture_row("evil", marker)
    env.fake.script(Reply(text="hello"))
    result = cli(env, "ask", "hi")
    assert result.returncode == 1
    assert result.stderr.startswith("error: not approved on this machine") and result.stderr.count("\n") == 1
    assert "start the MCP server evil: " in result.stderr
    result = cli(env, "mcp", "test", "evil")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "tui-agent approve" in result.stderr
    assert "(not approved here: tui-agent approve)" in cli(env, "mcp", "list").stdout
    assert not marker.exists() and env.fake.requests == []

    assert cli(env, "approve", "--yes").returncode == 0
    result = cli(env, "mcp", "test", "evil")
    assert result.returncode == 0, result.stderr
    assert marker.exists()


async def test_the_gate_holds_where_the_server_starts_whoever_calls(env, tmp_path):
    """Not only the commands' questions: the connection itself refuses an unapproved server."""
    from tui_agent.core.mcp.connection import ServerConnection

    marker = tmp_path / "started"
    config = mcp_config.ServerConfig(
        name="sneaky",
        transport="stdio",
        command=sys.executable,
        args=[str(FIXTURE), "stdio"],
        env={"FIXTURE_MCP_PIDS": str(marker)},
    )
    connection = ServerConnection(config, env.vault.logs / "mcp-sneaky.log", 20)
    assert await connection.start() is False
    assert connection.state == "failed"
    assert (
        connection.error.startswith("start the MCP server sneaky: ")
        and "not approved on this machine" in connection.error
    )
    assert not marker.exists()
    approvals.approve([mcp_config.approval_item(config)])
    assert await connection.start() is True
    await connection.stop()
    assert marker.exists()


def test_a_key_variable_set_here_beside_a_foreign_url_is_not_approved_by_the_write(env, attacker):
    """Writing api_key_env here does not approve sending it to a base_url someone else put there."""
    Profile.update(base_url=attacker.base_url).where(Profile.id == env.profile.id).execute()
    profile = env.reload_profile()
    profiles.set_field(profile, "api_key_env", "MY_KEY")
    assert [item.label for item in pending_for(profile)] == [
        f"send $MY_KEY (an API key) and the conversation to {attacker.base_url}"
    ]
    # And a base_url typed here, replacing an approved one, is approved as it is written.
    Profile.update(base_url=env.fake.base_url).where(Profile.id == env.profile.id).execute()
    approvals.approve(pending_for(env.reload_profile()))
    profiles.set_field(env.reload_profile(), "base_url", "http://127.0.0.1:9/v1")
    assert pending_for(env.reload_profile()) == []


def test_approvals_are_per_store(env, tmp_path):
    """The same value approved for one store is not approved for another."""
    item = approvals.endpoint("http://example.invalid/v1", "MY_KEY", "test")
    approvals.approve([item])
    assert approvals.approved(item)
    assert not approvals.approved(item, store="postgresql://elsewhere:5432/agent")
    stored = Path(os.environ["XDG_CONFIG_HOME"]) / "tui-agent" / "approved-settings.json"
    assert oct(stored.stat().st_mode & 0o777) == "0o600"
    assert "example.invalid" not in stored.read_text()  # hashes only
