"""MCP: show everything, read nothing unbounded (issue 26.4).

Real servers on the SDK's server side (tests/mcp_servers/hostile_server.py): a 50 MB result is
not read whole (the call ends at once with a note, the server stays usable), 600 tools or one
huge schema do not all go into every request (a note in the sidebar's state, ``mcp test`` and the
log), and the approval dialog shows every argument, scrollable, with invisible and bidi
characters made visible.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest
from cli_fork import tui_agent_argv, without_startup_variables
from fake_openai import Reply
from helpers import done, make_loop
from mcp_helpers import HOSTILE_SERVER, running_manager, server_command
from pilot_helpers import running

from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.mcp.bounded import LineBound
from tui_agent.core.mcp.connection import McpCallError
from tui_agent.core.mcp.manager import McpManager
from tui_agent.core.mcp.tool import approval_question
from tui_agent.core.mcp.tool_caps import MAX_SERVER_BYTES, MAX_TOOLS
from tui_agent.core.tools.registry import default_registry


def add_hostile(name: str, *flags: str) -> None:
    command, args = server_command(HOSTILE_SERVER, *flags)
    mcp_config.add_server(
        mcp_config.ServerConfig(name=name, transport="stdio", command=command, args=args, policy="auto")
    )


def test_the_line_reader_keeps_at_most_the_limit_and_finds_the_id():
    bound = LineBound(10)
    assert bound.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert bound.feed(b":2}\n") == [b'{"b":2}']
    head = b'{"jsonrpc":"2.0","id":7,"result":"' + b"x" * 30
    assert bound.feed(head) == []
    assert bound.feed(b"y" * 1000 + b'"}\nnext\n') == [(7, len(head) + 1002), b"next"]
    tail_id = b'{"result":"' + b"z" * 50 + b'","jsonrpc":"2.0","id":"r-9"}'
    assert bound.feed(tail_id + b"\n") == [("r-9", len(tail_id))]
    assert len(bound._buffer) == 0 and bound.feed(b"z" * 50 + b"\n") == [(None, 50)]


@pytest.mark.slow
async def test_a_50_mb_result_is_not_read_and_the_server_stays_usable(env):
    add_hostile("big")
    registry = default_registry()
    async with running_manager(env, registry) as manager:
        assert manager.states()["big"] == ("ready", "")
        env.fake.script(
            Reply(tool_calls=[("bulk", json.dumps({"size": 50_000_000}))]),
            Reply(tool_calls=[("echo", json.dumps({"text": "still here"}))]),
            Reply(text="done"),
        )
        import resource

        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB
        started = time.monotonic()
        loop = make_loop(env, registry)
        try:
            events = [e async for e in loop.run_turn(None, "fetch a lot")]
        finally:
            await loop.aclose()
        assert done(events).status == "complete"
        assert time.monotonic() - started < 60
        # The bound is kept, then dropped: not the 50 MB line (576 MB peak before the reader was bounded).
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 150_000
        results = [m for m in env.fake.chat_requests[-1]["messages"] if m["role"] == "tool"]
        first, second = (json.loads(m["content"]) for m in results)
        assert first["status"] == "error"
        assert "over the 28,000,000-byte limit for one message: it was not read" in first["error"]
        assert second == {"status": "ok", "data": {"content": "echo: still here"}}
        assert "over the 28,000,000-byte limit" in (env.vault.logs / "agent.log").read_text()


@pytest.mark.slow
async def test_an_http_body_is_read_only_up_to_the_limit(env, tmp_path, monkeypatch):
    """Streamable HTTP with plain JSON answers (no SSE): the body stops at the bound."""

    from mcp_helpers import free_port

    from tui_agent.core.mcp import bounded

    monkeypatch.setattr(bounded, "MAX_MESSAGE_BYTES", 2_000_000)
    port = free_port()
    log = tmp_path / "http.log"
    command, args = server_command(HOSTILE_SERVER, "--http", str(port), "--json")
    server = subprocess.Popen(
        [command, *args],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**without_startup_variables(), "FIXTURE_MCP_PIDS": ""},
    )
    try:
        mcp_config.add_server(
            mcp_config.ServerConfig(name="web", transport="http", url=f"http://127.0.0.1:{port}/mcp", policy="auto")
        )
        registry = default_registry()
        manager = McpManager(env.vault, registry)
        deadline = time.monotonic() + 60
        while True:
            await manager.start(env.profile)
            if manager.states()["web"][0] == "ready" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.3)  # the server is still starting
        try:
            assert manager.states()["web"][0] == "ready", manager.states()
            connection = manager.connections["web"]
            with pytest.raises(McpCallError, match="over the 2,000,000-byte limit"):
                await connection.call("bulk", {"size": 5_000_000}, 60)
            result = await connection.call("echo", {"text": "after"}, 60)
            assert result.content[0].text == "echo: after"
        finally:
            await manager.aclose()
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.mark.slow
async def test_tool_count_and_schema_size_are_capped_with_a_note(env):
    add_hostile("many", "--many", "600", "--schema-bytes", "300000")
    registry = default_registry()
    async with running_manager(env, registry) as manager:
        state, note = manager.states()["many"]
        assert state == "ready"
        assert "1 tool(s) left out, each over 16,384 bytes of schema: wide (" in note
        assert f"only {MAX_TOOLS} of 603 tools are offered to the model" in note
        env.fake.script(Reply(text="ok"))
        loop = make_loop(env, registry)
        try:
            [e async for e in loop.run_turn(None, "hi")]
        finally:
            await loop.aclose()
        request = env.fake.chat_requests[-1]
        mcp_tools = [t for t in request["tools"] if "[MCP server many]" in t["function"]["description"]]
        assert len(mcp_tools) == MAX_TOOLS
        assert len(json.dumps(mcp_tools)) < MAX_SERVER_BYTES * 1.5
        assert "only 64 of 603 tools" in (env.vault.logs / "agent.log").read_text()
    result = subprocess.run(
        [*tui_agent_argv(), "--vault", str(env.vault.root), "mcp", "test", "many"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    assert f"ready, {MAX_TOOLS} tool(s)" in result.stdout and "note: only 64 of 603 tools" in result.stdout


async def test_the_approval_dialog_shows_every_argument_and_reveals_hidden_characters(env):
    from pilot_helpers import screen_text, until

    from tui_agent.ui.screens.approval import ApprovalScreen

    arguments = {"body": "x" * 5000, "target": "invoice\u202egpj.exe", "z\u200bkey": "last value"}
    question = approval_question("srv", "write", arguments)
    async with running(env, size=(100, 40)) as (app, pilot):
        app.push_screen(ApprovalScreen("write", question))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.query(".dialog-body"))
        body = app.screen.query_one(".dialog-body")
        shown = str(app.screen.query_one("#approval-question").render())
        assert shown.count("x") >= 5000  # nothing cut
        assert '"target": "invoice<U+202E>gpj.exe"' in shown and '"z<U+200B>key": "last value"' in shown
        assert "\u202e" not in shown and "\u200b" not in shown
        await until(pilot, lambda: body.max_scroll_y > 0)  # scrollable, once laid out (slow under load)
        body.scroll_end(animate=False)
        # The last argument is reached by scrolling: on the screen once the scroll is drawn (waited
        # for, not given 0.2 s: at load 12 on 2 cores it was not drawn yet).
        await until(pilot, lambda: '"z<U+200B>key": "last value"' in screen_text(app))


@pytest.mark.slow
def test_ask_shows_the_approved_arguments_with_hidden_characters_revealed(env):
    command, args = server_command(HOSTILE_SERVER)
    mcp_config.add_server(
        mcp_config.ServerConfig(name="srv", transport="stdio", command=command, args=args, policy="ask")
    )
    env.fake.script(
        Reply(tool_calls=[("echo", json.dumps({"text": "pay\u200b to\u202eeht\u202c"}, ensure_ascii=False))]),
        Reply(text="done"),
    )
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), "ask", "--yes", "--raw", "--new", "go"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    assert '"text": "pay<U+200B> to<U+202E>eht<U+202C>"' in result.stderr
