"""A malformed mcp_servers row written by a peer is one line for that server, never a traceback, and
the other servers still work (issue 34 item 6)."""

from __future__ import annotations

import os
import subprocess

from cli_fork import tui_agent_argv
from fake_openai import Reply
from mcp_helpers import add_fixture

from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store.models import McpServer

BAD_ROWS = {
    "notjson": {"args": "[not json"},
    "dictargs": {"args": '{"a": "b"}'},
    "numenv": {"env": '{"K": 5}'},
    "deep": {"args": "[" * 5000 + "]" * 5000},
}


def cli(env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tui_agent_argv(), "--vault", str(env.vault.root), *args],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        env=os.environ.copy(),
    )


def test_a_malformed_row_is_one_line_for_that_server_and_the_others_work(env, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("FIXTURE_MCP_PIDS", str(pids))
    add_fixture("good")
    for name, columns in BAD_ROWS.items():
        McpServer.insert(name=name, transport="stdio", command="true", **columns).execute()

    listed = cli(env, "mcp", "list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(line.startswith("on  good\t") for line in lines)
    for name in BAD_ROWS:
        (line,) = [line for line in lines if line.startswith(f"err {name}\t")]
        assert "the stored setting is malformed" in line

    for name in BAD_ROWS:
        tested = cli(env, "mcp", "test", name)
        assert tested.returncode == 2 and tested.stdout == "", tested.stderr
        assert tested.stderr.startswith(f"error: MCP server {name}: the stored setting is malformed (")
        assert tested.stderr.count("\n") == 1
    assert cli(env, "mcp", "test", "good").returncode == 0

    env.fake.script(Reply(text="fine"))
    asked = cli(env, "ask", "hi")
    assert (asked.returncode, asked.stdout) == (0, "fine\n"), asked.stderr
    assert "Traceback" not in asked.stderr
    for name in BAD_ROWS:
        assert f"MCP server {name} could not start: MCP server {name}: the stored setting is malformed" in asked.stderr
    assert pids.exists()  # the good one started


def test_in_process_every_reader_gets_the_error_not_an_exception(env):
    McpServer.insert(name="bad", transport="stdio", command="true", args="5").execute()
    (bad,) = mcp_config.list_servers()
    assert bad.error.startswith("MCP server bad: the stored setting is malformed (args: the stored value must be")
    assert bad.describe() == bad.error
