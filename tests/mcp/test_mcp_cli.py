"""``tui-agent mcp ...`` and ``tui-agent ask`` with MCP servers, as a user runs them (subprocesses)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from fake_openai import Reply
from mcp_helpers import FIXTURE, server_command, started_pids, wait_gone

pytestmark = BOTH_BACKENDS

pytestmark = pytest.mark.slow


def tui(vault, *args, stdin=None, env=None, timeout=120):
    argv = [*tui_agent_argv(), "--vault", str(vault), *args]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        env=env,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def fixture_argv(*args: str) -> list[str]:
    command, rest = server_command(FIXTURE, "stdio", *args)
    return [command, *rest]


def add_fixture(vault, name="fx", *options):
    result = tui(vault, "mcp", "add", name, *options, "--", *fixture_argv())
    assert result.returncode == 0, result.stderr
    return result


def test_add_list_test_enable_disable_remove(env):
    vault = env.vault.root
    empty = tui(vault, "mcp", "list")
    assert empty.returncode == 0 and "no MCP servers" in empty.stdout
    added = add_fixture(vault, "fx", "--env", "A=1", "--auto", "echo")
    assert "added MCP server fx (stdio:" in added.stdout
    listing = tui(vault, "mcp", "list").stdout
    assert listing.startswith("on  fx\tstdio\task echo=auto\t") and str(FIXTURE) in listing
    tested = tui(vault, "mcp", "test", "fx")
    assert tested.returncode == 0, tested.stderr
    assert "MCP server fx: ready, " in tested.stdout
    assert "  echo (auto): Echo the text back" in tested.stdout
    assert "  picture (ask): Draw a small picture" in tested.stdout
    assert (
        tui(vault, "mcp", "disable", "fx", "--profile", "test").stdout.strip() == "MCP server fx off for profile test"
    )
    assert tui(vault, "mcp", "list").stdout.startswith("off fx")
    assert tui(vault, "mcp", "list", "--profile", "default").returncode == 2  # no such profile: error, not a guess
    tui(vault, "mcp", "enable", "fx", "--profile", "test")
    assert tui(vault, "mcp", "policy", "fx", "auto").stdout.strip() == "fx: auto"
    assert tui(vault, "mcp", "list").stdout.startswith("on  fx\tstdio\tauto")
    assert tui(vault, "mcp", "remove", "fx").returncode == 0
    assert "no MCP servers" in tui(vault, "mcp", "list").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "web", "--url", "ftp://example"], "error: url: must be an http(s) URL, got 'ftp://example'"),
        (["add", "web", "--url", "http://h/mcp", "--header", "Authorization=sk-secret-1"], "error: headers: "),
        (["add", "x"], "error: command: missing: tui-agent mcp add NAME -- COMMAND [ARGS...] or --url URL"),
        (["add", "x", "--policy", "maybe", "--", "true"], "error: policy: must be ask or auto, got 'maybe'"),
        (["add", "x", "--env", "NOEQUALS", "--", "true"], "error: env: expected KEY=VALUE, got 'NOEQUALS'"),
        (["remove", "ghost"], "error: name: no MCP server named 'ghost' (servers: none)"),
        (["enable", "ghost"], "error: name: no MCP server named 'ghost' (servers: none)"),
    ],
)
def test_bad_input_is_one_clear_line_and_nothing_is_stored(env, args, message):
    result = tui(env.vault.root, "mcp", *args)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and len(result.stderr.strip().splitlines()) == 1
    assert "sk-secret-1" not in result.stderr
    assert "no MCP servers" in tui(env.vault.root, "mcp", "list").stdout


def test_test_reports_a_server_that_cannot_start(env):
    vault = env.vault.root
    assert tui(vault, "mcp", "add", "gone", "--", "no-such-mcp-server-binary").returncode == 0
    result = tui(vault, "mcp", "test", "gone")
    assert result.returncode == 1
    assert (
        result.stderr.splitlines()[0] == "error: MCP server gone failed: command not found: no-such-mcp-server-binary"
    )


def test_ask_uses_mcp_tools_with_yes_and_every_child_is_gone(env, tmp_path):
    vault = env.vault.root
    pids = tmp_path / "pids.txt"
    add_fixture(vault, "fx", "--env", "FIXTURE_MCP_PIDS=${FIXTURE_MCP_PIDS}")
    env.fake.script(Reply(tool_calls=[("echo", '{"text": "from ask"}')]), Reply(text="The tool echoed."))
    run_env = {**os.environ, "FIXTURE_MCP_PIDS": str(pids)}
    result = tui(vault, "ask", "--yes", "--new", "call", "echo", env=run_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The tool echoed.\n"
    assert "→ fx: echo" in result.stderr and "← echo: ok" in result.stderr
    assert "approved (--yes)" in result.stderr
    tools = {tool["function"]["name"] for tool in env.fake.chat_requests[0]["tools"]}
    assert {"echo", "picture", "generate_image"} <= tools
    assert "echo: from ask" in env.fake.chat_requests[1]["messages"][-1]["content"]
    assert len(started_pids(pids)) == 1 and wait_gone(started_pids(pids), timeout_s=30) == []


def test_non_interactive_ask_without_yes_refuses_clearly(env):
    vault = env.vault.root
    add_fixture(vault)
    env.fake.script(Reply(tool_calls=[("echo", '{"text": "x"}')]), Reply(text="It was refused."))
    result = tui(vault, "ask", "--new", "call", "echo")
    assert result.returncode == 0, result.stderr
    assert "[echo] refused: pass --yes to approve: Run tool 'echo' of MCP server 'fx'" in result.stderr
    tool_message = env.fake.chat_requests[1]["messages"][-1]
    assert "did not approve echo on MCP server fx" in tool_message["content"]
    assert "tui-agent ask --yes" in tool_message["content"]


def test_ask_with_a_dead_server_still_answers(env):
    vault = env.vault.root
    assert tui(vault, "mcp", "add", "broken", "--", *fixture_argv("--die-on-start")).returncode == 0
    env.fake.script(Reply(text="Answered without it."))
    result = tui(vault, "ask", "--new", "hello")
    assert result.returncode == 0
    assert result.stdout == "Answered without it.\n"
    assert "⚠ MCP server broken could not start" in result.stderr
    assert "echo" not in {tool["function"]["name"] for tool in env.fake.chat_requests[0]["tools"]}


def test_mcp_server_time_from_pypi(env):
    """mcp-server-time (the reference 'time' server, PyPI), configured as the manual says (docs/tools.md)."""
    command = shutil.which("mcp-server-time")
    if command is None:
        pytest.skip("needs mcp-server-time: pip install mcp-server-time")
    vault = env.vault.root
    added = tui(
        vault, "mcp", "add", "time", "--auto", "get_current_time", "--", "mcp-server-time", "--local-timezone", "UTC"
    )
    assert added.returncode == 0, added.stderr
    tested = tui(vault, "mcp", "test", "time")
    assert tested.returncode == 0, tested.stderr
    assert "get_current_time (auto)" in tested.stdout and "convert_time (ask)" in tested.stdout
    env.fake.script(
        Reply(tool_calls=[("get_current_time", '{"timezone": "Europe/Paris"}')]), Reply(text="It is evening in Paris.")
    )
    result = tui(vault, "ask", "--new", "what time is it in Paris?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is evening in Paris.\n"
    fed_back = env.fake.chat_requests[1]["messages"][-1]["content"]
    assert "Europe/Paris" in fed_back and '"status": "ok"' in fed_back
    schema = {t["function"]["name"]: t["function"] for t in env.fake.chat_requests[0]["tools"]}
    assert "timezone" in schema["get_current_time"]["parameters"]["properties"]


def test_sigterm_during_ask_stops_the_servers(env, tmp_path):
    import signal
    import time

    vault = env.vault.root
    pids = tmp_path / "pids.txt"
    add_fixture(vault, "fx", "--auto", "slow", "--env", "FIXTURE_MCP_PIDS=${FIXTURE_MCP_PIDS}")
    env.fake.script(Reply(tool_calls=[("slow", '{"seconds": 600}')]))
    argv = [*tui_agent_argv(), "--vault", str(vault), "ask", "--new", "wait"]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FIXTURE_MCP_PIDS": str(pids)},
    )
    try:
        deadline = time.monotonic() + 90
        while len(env.fake.chat_requests) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # the slow call is under way
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err
    assert "terminated" in err
    assert len(started_pids(pids)) == 1 and wait_gone(started_pids(pids), timeout_s=30) == []


def test_interactive_ask_asks_on_the_terminal(env):
    """On a terminal (stdin and stderr a tty), ask prints the question and waits for y/N."""
    import time

    vault = env.vault.root
    add_fixture(vault)
    env.fake.script(Reply(tool_calls=[("echo", '{"text": "tty"}')]), Reply(text="Approved on the tty."))
    leader, follower = os.openpty()
    argv = [*tui_agent_argv(), "--vault", str(vault), "ask", "--new", "use", "echo"]
    process = subprocess.Popen(argv, stdin=follower, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 90
        while b"approve? [y/N]" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 4096)
        assert b"Run tool 'echo' of MCP server 'fx'" in seen
        os.write(leader, b"y\n")
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    assert process.returncode == 0
    assert out == "Approved on the tty.\n"
    assert "echo: tty" in env.fake.chat_requests[1]["messages"][-1]["content"]
