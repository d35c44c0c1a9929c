"""The first token sooner: the request leaves before the turn's first events are drawn, and what
the screen shows while a reply streams does not lay the whole screen out again."""

from __future__ import annotations

import asyncio
import copy
import pickle

import pytest
from fake_openai import Reply
from helpers import make_loop, rows
from pilot_helpers import running, settle
from textual.widget import Widget

from tui_agent.core import events as ev
from tui_agent.ui.widgets.context_meter import ContextMeter


async def _until(condition, timeout: float = 60.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_the_request_leaves_while_the_turn_is_being_drawn(env):
    env.fake.script(Reply(text="Hello there."))
    loop = make_loop(env)
    seen: list[type] = []
    try:
        async for event in loop.run_turn(None, "hi"):
            seen.append(type(event))
            if isinstance(event, (ev.ContextBuilt, ev.AssistantStarted)) and not env.fake.chat_requests:
                # The screen is still drawing this event (a slow frame): the request is on its way anyway.
                assert await _until(lambda: bool(env.fake.chat_requests)), "the request waited for the screen"
    finally:
        await loop.aclose()
    assert seen.index(ev.ContextBuilt) < seen.index(ev.AssistantStarted) < seen.index(ev.TextDelta)
    assert seen[-1] is ev.Done
    assert [r[1:4] for r in rows(env.vault.db_path)] == [
        ("user", "hi", "complete"),
        ("assistant", "Hello there.", "complete"),
    ]


async def test_a_turn_closed_while_its_request_is_out_leaves_nothing_running(env):
    env.fake.script(Reply(text="Too late.", hang_s=2.0), Reply(text="Second answer."))
    loop = make_loop(env)
    try:
        turn = loop.run_turn(None, "hi")
        async for event in turn:
            if isinstance(event, ev.AssistantStarted):
                assert await _until(lambda: bool(env.fake.chat_requests))
                break  # the user cancelled while the server had not answered yet
        await turn.aclose()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == [], others  # the request's task was cancelled and awaited, not left behind
        conversation = rows(env.vault.db_path, "SELECT conversation_id FROM messages")[0][0]
        events = [e async for e in loop.run_turn(conversation, "again")]  # the client still works
    finally:
        await loop.aclose()
    assert events[-1] == ev.Done("complete", conversation)
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) in ("Too late.", "Second answer.")


def _layouts_asked(monkeypatch: pytest.MonkeyPatch, widget: Widget) -> list[bool]:
    """Each refresh the widget asks for: True when it asks to lay the screen out again."""
    asked: list[bool] = []
    real = widget.refresh

    def spy(*regions, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(bool(kwargs.get("layout")))
        return real(*regions, **kwargs)

    monkeypatch.setattr(widget, "refresh", spy)
    return asked


async def test_status_updates_while_streaming_repaint_the_line_only(env, monkeypatch):
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        asked = _layouts_asked(monkeypatch, app.conversation_view.status_line)
        width = app.conversation_view.status_line.region.width
        for tokens in range(1, 21):  # once a frame while a reply streams
            app.conversation_view.status_line.streaming("chat-model", tokens * 7, app.clock() - 1.0)
            await pilot.pause()
        assert "140 tokens" in str(app.conversation_view.status_line.render())
        assert asked and not any(asked)  # repainted each time, never laid out again
        assert app.conversation_view.status_line.region.width == width  # one row, as wide as the row leaves it


async def test_the_context_meter_lays_out_only_when_its_width_changes(env, monkeypatch):
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        meter = app.query_one(ContextMeter)
        meter.show(1200, 32000, estimated=True)
        await pilot.pause()
        asked = _layouts_asked(monkeypatch, meter)
        meter.show(1300, 32000, estimated=True)  # "ctx ~1.3k / 32.0k (4%)": as wide as before
        await pilot.pause()
        assert asked and not any(asked)
        assert "1.3k" in str(meter.render())
        meter.show(12_000, 32_000, estimated=True)  # wider: the status line beside it gets narrower
        await pilot.pause()
        assert any(asked)
        assert meter.region.width == len("ctx ~12.0k / 32.0k (38%)") + 2
        assert (
            app.conversation_view.status_line.region.right == meter.region.x
            or meter.region.right == app.conversation_view.status_line.region.x
        )


def test_events_are_immutable_values():
    a = ev.AssistantFinished(3, "text", "m", "complete", reasoning="why")
    assert a == ev.AssistantFinished(3, "text", "m", "complete", None, None, "why")
    assert a != ev.AssistantFinished(3, "text", "m", "error", reasoning="why")
    assert ev.TextDelta("x") != ev.ReasoningDelta("x")  # same fields, other kind
    assert hash(ev.TextDelta("x")) == hash(ev.TextDelta("x"))
    assert len({ev.TextDelta("x"), ev.TextDelta("x"), ev.ReasoningDelta("x")}) == 2
    with pytest.raises(AttributeError, match="immutable"):
        a.text = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        a.other = 1  # type: ignore[attr-defined]
    assert "status='complete'" in repr(a) and repr(ev.ErrorEvent("boom")).startswith("ErrorEvent(")
    assert ev.Done("complete").conversation_id is None and ev.ErrorEvent("x").kind == "error"
    for event in (a, ev.ErrorEvent("boom", "server"), ev.ContextBuilt(1, 20, 100, None, False)):
        assert copy.copy(event) == pickle.loads(pickle.dumps(event)) == event
