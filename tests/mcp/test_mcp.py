"""MCP servers as tools through the one registry and the one loop: real servers written with the
official SDK (tests/mcp_servers/fixture_server.py), the real openai client against the loopback model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fake_openai import Reply
from helpers import done, make_loop, rows
from mcp_helpers import add_fixture, free_port, running_manager, start_http_fixture, started_pids, wait_gone

from tui_agent.core import events as ev
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.mcp.manager import McpManager
from tui_agent.core.store import migrations
from tui_agent.core.tools.registry import ToolRegistry, default_registry


async def _turn(env, registry, text, conversation_id=None, **kwargs):
    loop = make_loop(env, registry, **kwargs)
    try:
        return [e async for e in loop.run_turn(conversation_id, text)]
    finally:
        await loop.aclose()


def _tools(request):
    return {tool["function"]["name"]: tool["function"] for tool in request.get("tools", [])}


async def test_migration_step_adds_the_tables_and_the_profile_field(env):
    import sqlite3

    conn = sqlite3.connect(env.vault.db_path)
    try:
        version = migrations.STEPS.index(migrations.V_MCP) + 1
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= version
        columns = {row[1] for row in conn.execute("PRAGMA table_info(mcp_servers)")}
        assert {"name", "transport", "command", "args", "env", "cwd", "url", "headers", "policy"} <= columns
        assert "mcp_timeout_s" in {row[1] for row in conn.execute("PRAGMA table_info(profiles)")}
    finally:
        conn.close()


@pytest.mark.slow
async def test_tools_are_listed_called_and_fed_back(env, pids):
    add_fixture()
    registry = default_registry()
    async with running_manager(env, registry) as manager:
        assert manager.states() == {"fx": ("ready", "")}
        env.fake.script(Reply(tool_calls=[("echo", '{"text": "hello mcp"}')]), Reply(text="The server said hello."))
        events = await _turn(env, registry, "use the echo tool")
        assert done(events).status == "complete"
        first, second = env.fake.chat_requests
        tools = _tools(first)
        # schema passed through, built-in tools still there: one registry
        assert tools["echo"]["parameters"]["properties"]["text"]["type"] == "string"
        assert tools["echo"]["parameters"]["required"] == ["text"]
        assert "generate_image" in tools and "memory_sql" in tools
        result = next(m for m in second["messages"] if m["role"] == "tool")
        assert json.loads(result["content"]) == {"status": "ok", "data": {"content": "echo: hello mcp"}}
        stored = rows(env.vault.db_path, "SELECT role, tool_name, status FROM messages WHERE tool_call_id IS NOT NULL")
        assert ("mcp_tool", "echo", "complete") in stored
        finished = next(e for e in events if isinstance(e, ev.ToolFinished))
        assert finished.role == "mcp_tool" and finished.result.is_ok
    assert started_pids(pids) and wait_gone(started_pids(pids)) == []


@pytest.mark.slow
async def test_image_content_is_saved_shown_and_seen_by_the_vision_model(env, pids):
    add_fixture()
    registry = ToolRegistry()
    async with running_manager(env, registry):
        env.fake.script(Reply(tool_calls=[("picture", '{"color": "green"}')]), Reply(text="A green square."))
        events = await _turn(env, registry, "draw")
        assert done(events).status == "complete"
        finished = next(e for e in events if isinstance(e, ev.ToolFinished))
        [image] = finished.result.images
        assert image.startswith("media/mcp/fx/picture-") and image.endswith(".png")
        from PIL import Image

        with Image.open(env.vault.root / image) as picture:
            assert picture.getpixel((1, 1)) == (30, 200, 60)
        follow_up = env.fake.chat_requests[1]
        assert follow_up["model"] == "vision-model"
        assert any(
            part.get("type") == "image_url"
            for message in follow_up["messages"]
            if isinstance(message.get("content"), list)
            for part in message["content"]
        )
        assert any(isinstance(e, ev.ModelSwitched) for e in events)


@pytest.mark.slow
async def test_error_huge_and_slow_results(env, pids):
    # The server's own call timeout is what stops "slow" (2 s on "lazy"); "huge" runs on "fx" with a
    # timeout far from any machine's speed (3 s, then 6 s of a shared limit were a guess: 3 s cut it once).
    add_fixture("fx", timeout_s=600)
    add_fixture("lazy", timeout_s=2)
    registry = ToolRegistry()
    async with running_manager(env, registry) as manager:
        env.fake.script(
            Reply(tool_calls=[("fx__broken", '{"reason": "on purpose"}'), ("fx__huge", '{"size": 50000}')]),
            Reply(tool_calls=[("lazy__slow", '{"seconds": 3600}')]),
            Reply(text="done"),
        )
        events = await _turn(env, registry, "try them")
        results = {e.name: e.result for e in events if isinstance(e, ev.ToolFinished)}
        assert not results["fx__broken"].is_ok and "broken" in results["fx__broken"].error
        assert results["fx__huge"].is_ok
        assert len(results["fx__huge"].data["content"]) == 20_000
        assert "truncated: showing 20,000 of 50,000" in results["fx__huge"].data["note"]
        assert not results["lazy__slow"].is_ok and "timed out after 2s" in results["lazy__slow"].error
        assert done(events).status == "complete"
        # the server is still usable after a call timed out
        assert (await manager.connections["lazy"].call("echo", {"text": "still here"}, 600)).content[0].text == (
            "echo: still here"
        )


@pytest.mark.slow
@pytest.mark.parametrize("era", ["2026 (subscriptions/listen)", "handshake (notification)"])
async def test_list_changed_refreshes_the_schemas(env, pids, era):
    add_fixture("fx", *(["--legacy"] if era.startswith("handshake") else []))
    registry = ToolRegistry()
    async with running_manager(env, registry) as manager:
        assert "extra" not in registry
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        modern = manager.connections["fx"]._client.protocol_version in MODERN_PROTOCOL_VERSIONS
        assert modern == era.startswith("2026")
        env.fake.script(Reply(tool_calls=[("grow", "{}")]), Reply(text="grown"))
        await _turn(env, registry, "grow")
        for _ in range(200):
            if "extra" in registry:
                break
            await asyncio.sleep(0.05)
        assert "extra" in registry
        env.fake.script(Reply(text="ok"))
        await _turn(env, registry, "next")
        assert "extra" in _tools(env.fake.chat_requests[-1])


@pytest.mark.slow
async def test_garbage_on_stdout_is_isolated(env, pids):
    add_fixture("noisy", "--garbage")
    registry = ToolRegistry()
    async with running_manager(env, registry) as manager:
        connection = manager.connections["noisy"]
        assert connection.state == "ready"
        result = await connection.call("noisy", {}, 10)
        assert result.content[0].text == "noisy answered"
        assert (await connection.call("echo", {"text": "fine"}, 10)).content[0].text == "echo: fine"
        # a malformed JSON-RPC result is an error for that call only
        env.fake.script(Reply(tool_calls=[("malformed", "{}")]), Reply(text="that failed"))
        events = await _turn(env, registry, "malformed")
        failed = next(e for e in events if isinstance(e, ev.ToolFinished)).result
        assert not failed.is_ok and failed.error.startswith("MCP server noisy sent a malformed result for malformed")
        assert (await connection.call("echo", {"text": "after"}, 10)).content[0].text == "echo: after"
        assert connection.state == "ready"
        assert connection.garbage_lines >= 3
        assert "garbage between messages" in connection.last_garbage
        log = (env.vault.logs / "agent.log").read_text()
        assert "garbage before the first message" in log  # into the vault log, not onto the screen


@asynccontextmanager
async def fixture_running(env: Any) -> AsyncIterator[tuple[Any, ToolRegistry, list[str]]]:
    """The fixture server added and started: ``(the manager, its registry, the notices it gave)``."""
    add_fixture()
    notices: list[str] = []
    registry = ToolRegistry()
    async with running_manager(env, registry, notice=notices.append) as manager:
        yield manager, registry, notices


@pytest.mark.slow
async def test_a_dead_server_is_reported_once_left_out_and_restarted(env, pids):
    async with fixture_running(env) as (manager, registry, notices):
        env.fake.script(Reply(tool_calls=[("die", "{}")]), Reply(text="it died"), Reply(text="no tools"))
        events = await _turn(env, registry, "kill it")
        failed = next(e for e in events if isinstance(e, ev.ToolFinished))
        assert not failed.result.is_ok and "closed the connection" in failed.result.error
        for _ in range(100):
            if manager.states()["fx"][0] == "dead":
                break
            await asyncio.sleep(0.05)
        assert manager.states()["fx"][0] == "dead"
        assert len(notices) == 1 and "fx stopped" in notices[0]
        # the request right after the death already leaves its tools out
        assert "echo" not in _tools(env.fake.chat_requests[1])
        first_pid = started_pids(pids)[0]
        assert wait_gone([first_pid]) == []
        await manager.before_turn(env.profile)  # the next turn starts it again
        assert manager.states()["fx"] == ("ready", "")
        env.fake.script(Reply(text="back"))
        await _turn(env, registry, "again")
        assert "echo" in _tools(env.fake.chat_requests[-1])
        assert len(notices) == 1
    assert wait_gone(started_pids(pids)) == []


@pytest.mark.slow
async def test_start_failures_are_reported_and_hanging_servers_killed(env, pids):
    add_fixture("crashes", "--die-on-start")
    mcp_config.add_server(mcp_config.ServerConfig(name="missing", transport="stdio", command="no-such-mcp-server"))
    # The crash is what is checked, not the start's limit: the fixture loads the SDK before it dies
    # (1.8 s of CPU), over 8 s on a loaded machine, where an 8 s limit ended it before it could say why.
    env.profile.mcp_timeout_s = 600
    notices: list[str] = []
    async with running_manager(env, ToolRegistry(), notice=notices.append) as manager:
        states = manager.states()
        assert states["crashes"] == (
            "failed",
            "the server exited while starting: fixture server: dying on start as asked (see mcp-crashes.log)",
        )
        assert states["missing"] == ("failed", "command not found: no-such-mcp-server")
        assert sorted(n.split()[2] for n in notices) == ["crashes", "missing"]
        assert "dying on start" in (env.vault.logs / "mcp-crashes.log").read_text()  # stderr went to the vault log
        assert wait_gone(started_pids(pids)) == []
    mcp_config.set_enabled("crashes", False, env.profile)
    mcp_config.set_enabled("missing", False, env.profile)
    add_fixture("hangs", "--hang-on-start")
    env.profile.mcp_timeout_s = 8  # the profile's timeout bounds a start
    notices.clear()
    async with running_manager(env, ToolRegistry(), notice=notices.append) as manager:
        assert manager.states() == {"hangs": ("failed", "did not start within 8s (timeout)")}
        assert [n.split()[2] for n in notices] == ["hangs"]
        assert wait_gone(started_pids(pids)) == []


@pytest.mark.slow
async def test_approval_asks_with_one_question_and_refusal_is_an_error(env, pids):
    add_fixture(policy="ask")
    mcp_config.set_policy("fx", "auto", tool="picture")
    registry = ToolRegistry()
    manager = McpManager(env.vault, registry)
    await manager.start(env.profile)
    asked: list[tuple[str, str]] = []

    async def no(tool: str, question: str) -> bool:
        asked.append((tool, question))
        return False

    try:
        env.fake.script(
            Reply(tool_calls=[("echo", '{"text": "secret"}'), ("picture", "{}")]),
            Reply(text="refused"),
        )
        events = await _turn(env, registry, "go", approve=no)
        results = {e.name: e.result for e in events if isinstance(e, ev.ToolFinished)}
        assert [tool for tool, _ in asked] == ["echo"]  # picture is auto
        assert "MCP server 'fx'" in asked[0][1] and '"text": "secret"' in asked[0][1]
        assert not results["echo"].is_ok and "did not approve" in results["echo"].error
        assert results["picture"].is_ok

        async def yes(tool: str, question: str) -> bool:
            return True

        env.fake.script(Reply(tool_calls=[("echo", '{"text": "ok now"}')]), Reply(text="fine"))
        events = await _turn(env, registry, "again", approve=yes)
        assert next(e for e in events if isinstance(e, ev.ToolFinished)).result.data == {"content": "echo: ok now"}
    finally:
        await manager.aclose()


async def test_clashing_names_are_namespaced(env, pids):
    add_fixture("one")
    add_fixture("two")
    registry = default_registry()
    async with running_manager(env, registry):
        names = set(registry.names())
        assert {"one__echo", "two__echo", "one__picture", "two__picture"} <= names
        assert "echo" not in names
        one = registry.get("one__echo")
        assert one is not None and one.role == "mcp_tool"


@pytest.mark.slow
async def test_streamable_http_server_with_a_header_from_the_environment(env, tmp_path, monkeypatch):
    port = free_port()
    process = start_http_fixture(port, tmp_path / "http.log")
    try:
        monkeypatch.setenv("TUI_TEST_SECRET", "s3cret-value")
        mcp_config.add_server(
            mcp_config.ServerConfig(
                name="web",
                transport="http",
                url=f"http://127.0.0.1:{port}/mcp",
                headers={"X-Tui-Test": "Token ${TUI_TEST_SECRET}"},
                policy="auto",
            )
        )
        stored = (env.vault.db_path).read_bytes()
        assert b"s3cret-value" not in stored
        registry = ToolRegistry()
        async with running_manager(env, registry) as manager:
            assert manager.states()["web"] == ("ready", "")
            env.fake.script(Reply(tool_calls=[("header", "{}"), ("echo", '{"text": "over http"}')]), Reply(text="ok"))
            events = await _turn(env, registry, "http")
            results = {e.name: e.result for e in events if isinstance(e, ev.ToolFinished)}
            assert results["header"].data["content"] == "Token s3cret-value"
            assert results["echo"].data["content"] == "echo: over http"
    finally:
        process.terminate()
        process.wait(timeout=20)


async def test_a_disabled_server_for_the_profile_does_not_start(env, pids):
    add_fixture()
    mcp_config.set_enabled("fx", False, env.profile)
    manager = McpManager(env.vault, ToolRegistry())
    await manager.start(env.profile)
    assert manager.states() == {}
    assert started_pids(pids) == []
    assert mcp_config.get_server("fx").enabled is True  # only this profile switched it off
    await manager.aclose()


def test_configuration_errors_name_the_field(env):
    cases = [
        (dict(name="9bad", transport="stdio", command="x"), "name"),
        (dict(name="a__b", transport="stdio", command="x"), "name"),
        (dict(name="ok", transport="pipe", command="x"), "transport"),
        (dict(name="ok", transport="stdio"), "command"),
        (dict(name="ok", transport="http", url="ftp://x"), "url"),
        (dict(name="ok", transport="http", url="http://x/mcp", headers={"Authorization": "sk-live-123"}), "headers"),
        (dict(name="ok", transport="stdio", command="x", env={"A B": "1"}), "env"),
        (dict(name="ok", transport="stdio", command="x", policy="sometimes"), "policy"),
        (dict(name="ok", transport="stdio", command="x", tool_policies={"t": "never"}), "tool_policies"),
        (dict(name="ok", transport="stdio", command="x", timeout_s=0.1), "timeout_s"),
    ]
    for values, field in cases:
        with pytest.raises(mcp_config.McpConfigError) as caught:
            mcp_config.add_server(mcp_config.ServerConfig(**values))
        assert caught.value.field == field, values
        assert str(caught.value).startswith(f"{field}: ")
    assert mcp_config.list_servers() == []
    assert mcp_config.expand("Bearer ${TUI_X}", {"TUI_X": "v"}) == "Bearer v"
    assert mcp_config.expand("TUI_X", {"TUI_X": "v"}, whole_name=True) == "v"
    with pytest.raises(mcp_config.McpConfigError, match="TUI_Y is not set"):
        mcp_config.expand("${TUI_Y}", {})


@pytest.mark.slow
async def test_a_server_killed_while_idle_is_noticed_without_a_call(env, pids):
    import os
    import signal

    async with fixture_running(env) as (manager, registry, notices):
        assert "echo" in registry
        os.kill(started_pids(pids)[0], signal.SIGKILL)
        for _ in range(400):
            if manager.states()["fx"][0] == "dead":
                break
            await asyncio.sleep(0.05)
        assert manager.states()["fx"] == ("dead", "the server exited (see mcp-fx.log)")
        assert "echo" not in registry
        assert notices == [
            "MCP server fx stopped: the server exited (see mcp-fx.log). Its tools are left out; "
            "it is started again on the next turn."
        ]
