"""A turn closed between two events (the user cancelled while the screen drew one) ends at once:
its request, its reply (stored as cancelled) and its tool calls, with nothing left running."""

from __future__ import annotations

import asyncio
import gc

import peewee as pw
import pytest
from fake_openai import Reply
from helpers import EchoTool, make_loop, rows
from pilot_helpers import running

from tui_agent.core import events as ev
from tui_agent.core.reply import Reply as StoredReply
from tui_agent.core.tools.registry import ToolRegistry


def _others() -> list[str]:
    """Tasks still running code of ours. (httpx2 leaves the text decoder under ``aiter_lines`` of a
    response already closed to the garbage collector: that one is not counted.)"""
    ours = []
    for task in asyncio.all_tasks():
        if task is asyncio.current_task():
            continue
        coro = task.get_coro()
        for code in [getattr(coro, "cr_code", None), *(getattr(r, "ag_code", None) for r in gc.get_referents(coro))]:
            if code is not None and "tui_agent" in code.co_filename:
                ours.append(code.co_qualname)
    return ours


async def test_a_turn_closed_mid_reply_is_stored_as_cancelled_at_once(env):
    env.fake.script(Reply(tokens=[f" w{i}" for i in range(200)], chunk_delay_s=0.01))
    loop = make_loop(env)
    try:
        turn = loop.run_turn(None, "hi")
        deltas = 0
        async for event in turn:
            deltas += isinstance(event, ev.TextDelta)
            if deltas == 5:
                break  # the screen was drawing the fifth piece when the user pressed Esc
        await turn.aclose()
        assert _others() == []  # the response was closed here, not later by the garbage collector
        (assistant,) = [r for r in rows(env.vault.db_path) if r[1] == "assistant"]
        assert assistant[3] == "cancelled" and assistant[2].startswith(" w0 w1 w2 w3 w4")
    finally:
        await loop.aclose()


async def test_tool_calls_closed_while_they_are_shown_are_stored_as_cancelled(env):
    env.fake.script(Reply(tool_calls=[("echo", '{"text": "a"}'), ("echo", '{"text": "b"}')]))
    loop = make_loop(env, registry=ToolRegistry([EchoTool()]))
    try:
        turn = loop.run_turn(None, "use the tool twice")
        async for event in turn:
            if isinstance(event, ev.ToolStarted):
                break  # the first call's block was being drawn
        await turn.aclose()
        assert _others() == []
    finally:
        await loop.aclose()
    stored = rows(env.vault.db_path, "SELECT role, status FROM messages WHERE role = 'echo_tool'")
    assert stored == [("echo_tool", "cancelled"), ("echo_tool", "cancelled")]


async def test_a_store_failure_while_closing_does_not_break_the_close(env, monkeypatch):
    env.fake.script(Reply(tokens=[f" w{i}" for i in range(200)], chunk_delay_s=0.01))
    real_save = StoredReply.save

    def save(self, status: str):  # type: ignore[no-untyped-def]
        if status == "cancelled":
            raise pw.OperationalError("disk I/O error")  # the disk failed as the reply was being saved
        return real_save(self, status)

    monkeypatch.setattr(StoredReply, "save", save)
    loop = make_loop(env)
    try:
        turn = loop.run_turn(None, "hi")
        async for event in turn:
            if isinstance(event, ev.TextDelta):
                break
        await turn.aclose()  # ends as a close (no "async generator ignored GeneratorExit")
        assert _others() == []
    finally:
        await loop.aclose()


@pytest.mark.slow
async def test_an_unset_api_key_is_reported_and_the_welcome_line_comes_back(env, monkeypatch):
    """The profile names an API key variable that is not set: the app starts and says so (it
    crashed right after the first paint), and a message that cannot go keeps its text and the
    empty conversation's welcome line."""
    from pilot_helpers import children, send, until

    from tui_agent.ui.widgets.bubbles import UserBubble

    monkeypatch.delenv("TUI_TEST_UNSET_KEY", raising=False)
    from tui_agent.core import profiles

    # Named but not set: the turn fails before it is stored (set here, so approved here).
    profiles.set_field(env.profile, "api_key_env", "TUI_TEST_UNSET_KEY")
    async with running(env) as (app, pilot):
        (welcome,) = app.conversation_view.chat_log.query(".welcome")
        await until(pilot, lambda: "TUI_TEST_UNSET_KEY is not set" in str(app.conversation_view.status_line.render()))
        assert "TUI_TEST_UNSET_KEY is not set" in str(
            app.conversation_view.status_line.render()
        )  # said at start, no crash
        await send(app, pilot, "hello there")
        assert children(app, UserBubble) == []
        assert app.conversation_view.composer.text == "hello there"  # nothing lost
        assert welcome.display and welcome.is_attached  # hidden at Enter, shown again
        assert "TUI_TEST_UNSET_KEY" in str(app.conversation_view.chat_log.query(".error-card").first().render())
