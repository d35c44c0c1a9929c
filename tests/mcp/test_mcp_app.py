"""MCP servers in the app: started after the first paint, approval through the same modal, shown in
the sidebar with a switch, every child gone after quit (also on SIGTERM, and in a real terminal)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from fake_openai import Reply
from mcp_helpers import MCP_START_S, add_fixture, alive, my_children_running, started_pids, wait_gone
from pilot_helpers import running, send, send_approved, until
from textual.widgets import Switch

from tui_agent.core.mcp import config as mcp_config
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.tool_block import ToolResultView

pytestmark = pytest.mark.slow


async def test_servers_start_after_the_first_paint_and_calls_ask_in_the_modal(env, pids):
    add_fixture(policy="ask")
    mcp_config.set_policy("fx", "auto", tool="picture")
    async with running(
        env,
        Reply(tool_calls=[("echo", '{"text": "from the app"}')]),
        "Echoed.",
        Reply(tool_calls=[("picture", '{"color": "blue"}')]),
        "A blue picture.",
    ) as (app, pilot):
        assert app.mcp.states() == {}  # nothing started during the first paint
        await until(pilot, lambda: app.mcp.states().get("fx", ("",))[0] == "ready", MCP_START_S)
        assert "echo" in app.registry
        assert "Run tool 'echo' of MCP server 'fx'" in await send_approved(
            app, pilot, "echo please"
        )  # keys in its first 0.5 s are ignored
        tool_message = env.fake.chat_requests[1]["messages"][-1]
        assert "echo: from the app" in tool_message["content"]
        await send(app, pilot, "draw")
        view = list(app.conversation_view.chat_log.query(ToolResultView))[-1]
        carousel = view.query_one(ImageCarousel)
        assert len(carousel.paths) == 1 and "media/mcp/fx/picture-" in str(carousel.paths[0])
        assert env.fake.chat_requests[-1]["model"] == "vision-model"
    assert started_pids(pids) and wait_gone(started_pids(pids)) == []


async def test_sidebar_lists_servers_and_the_switch_stops_one(env, pids):
    add_fixture()
    add_fixture("crashes", "--die-on-start")
    async with running(env, size=(140, 50)) as (app, pilot):
        await until(pilot, lambda: app.mcp.states().get("fx", ("",))[0] == "ready", MCP_START_S)
        await until(pilot, lambda: app.mcp.states().get("crashes", ("",))[0] == "failed", MCP_START_S)
        await pilot.press("ctrl+b")
        await pilot.pause()
        fx_state = str(app.query_one("#mcp-state-fx").render())
        crash_state = app.query_one("#mcp-state-crashes")
        assert fx_state == "fx · ready"
        assert str(crash_state.render()).startswith("crashes · failed: ")
        assert crash_state.has_class("-failed")
        switch = app.query_one("#mcp-switch-fx", Switch)
        assert switch.value is True
        switch.value = False
        await until(pilot, lambda: "fx" not in app.mcp.states())
        assert str(app.query_one("#mcp-state-fx").render()) == "fx · off"
        assert "echo" not in app.registry
        assert mcp_config.get_server("fx", env.profile).enabled is False
        await until(pilot, lambda: not any(alive(pid) for pid in started_pids(pids)), timeout=30)
        # a failure was shown once, as a notification
        notices = app.notices_seen
        assert sum("MCP server crashes could not start" in m for m in notices) == 1


async def test_sigterm_ends_the_app_and_its_servers(env, pids):
    add_fixture()
    async with running(env) as (app, pilot):
        await until(pilot, lambda: app.mcp.states().get("fx", ("",))[0] == "ready", MCP_START_S)
        app.mcp.install_signal_handlers()  # run_test runs in the main thread's loop here
        os.kill(os.getpid(), signal.SIGTERM)
        await until(pilot, lambda: not app.is_running or app._exit_renderables is not None, timeout=60)
    assert wait_gone(started_pids(pids)) == []


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: apt-get install tmux")
def test_real_terminal_quit_and_sighup_leave_no_child(env, tmp_path, pids):
    add_fixture(policy="auto")
    session = f"tui-agent-mcp-{os.getpid()}"
    command = (
        f"cd {tmp_path} && FIXTURE_MCP_PIDS={pids} TUI_AGENT_VAULT={env.vault.root} TERM=xterm-256color "
        f"{sys.executable} -m tui_agent"
    )
    # A session that outlives both runs keeps this test's tmux server up: when the app's session
    # was its last, the server exited, and the next new-session could reach it while it was
    # exiting ("server exited unexpectedly", a CI run under load).
    subprocess.run(["tmux", "new-session", "-d", "-s", f"{session}-keep", "sleep 600"], check=True)
    for ending in ("C-q", "kill-session"):
        before = len(started_pids(pids))
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command], check=True)
        try:
            deadline = time.monotonic() + 90
            while len(started_pids(pids)) == before and time.monotonic() < deadline:
                time.sleep(0.2)
            assert len(started_pids(pids)) == before + 1, "the server did not start in the app"
            time.sleep(1.0)
            if ending == "C-q":
                subprocess.run(["tmux", "send-keys", "-t", session, "C-q"], check=True)
            else:  # closing the terminal sends SIGHUP to the app
                subprocess.run(["tmux", "kill-session", "-t", session], check=True)
            assert wait_gone(started_pids(pids)[before:], timeout_s=30) == [], ending
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


async def test_mcp_server_time_in_the_app(env):
    """The reference time server from PyPI, added as the manual says (docs/tools.md; policy ask), used in the app."""
    if shutil.which("mcp-server-time") is None:
        pytest.skip("needs mcp-server-time: pip install mcp-server-time")
    mcp_config.add_server(
        mcp_config.ServerConfig(
            name="time", transport="stdio", command="mcp-server-time", args=["--local-timezone", "UTC"]
        )
    )
    async with running(
        env, Reply(tool_calls=[("get_current_time", '{"timezone": "Asia/Tokyo"}')]), "It is late in Tokyo."
    ) as (app, pilot):
        await until(pilot, lambda: app.mcp.states().get("time", ("",))[0] == "ready", MCP_START_S)
        assert len(my_children_running("mcp-server-time")) == 1
        assert "Run tool 'get_current_time' of MCP server 'time'" in await send_approved(
            app, pilot, "time in Tokyo?"
        )  # keys in its first 0.5 s are ignored
        view = list(app.conversation_view.chat_log.query(ToolResultView))[-1]
        assert view.block.title == "Tool result · get_current_time · ✓ ok"
        fed_back = env.fake.chat_requests[1]["messages"][-1]
        assert fed_back["role"] == "tool" and "Asia/Tokyo" in fed_back["content"]
    assert my_children_running("mcp-server-time") == []  # gone after quit
