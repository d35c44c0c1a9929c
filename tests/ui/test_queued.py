"""Enter during a running reply queues the message visibly and sends it as its own turn when the
reply ends; a cancelled reply gives it back to the composer, never glued (issue 25, item 8)."""

from __future__ import annotations

import threading

import pytest
from fake_openai import Reply
from pilot_helpers import make, running, until

from tui_agent.ui.widgets.bubbles import UserBubble


async def type_text(pilot, text: str) -> None:
    for key in text:
        await pilot.press("space" if key == " " else key)


def queued_line(app) -> str:
    lines = [w for w in app.query("#queued") if w.display]
    return str(lines[0].render()) if lines else ""


async def two_typed_behind_a_running_reply(app, env, pilot) -> None:
    """ "foxtrot 1" sent (its reply running), then "foxtrot 2" sent behind it and "alpha 3" typed."""
    await type_text(pilot, "foxtrot 1")
    await pilot.press("enter")
    await until(pilot, lambda: bool(app.turns) and len(env.fake.chat_requests) == 1)
    await type_text(pilot, "foxtrot 2")
    await pilot.press("enter")
    await type_text(pilot, "alpha 3")


@pytest.mark.slow
async def test_a_message_sent_during_a_reply_waits_visibly_and_goes_as_its_own_turn(env):
    hold = threading.Event()
    async with running(env, Reply(text="first reply", hold=hold), "second reply", "third reply") as (app, pilot):
        await two_typed_behind_a_running_reply(app, env, pilot)
        await pilot.press("enter")
        assert app.conversation_view.composer.text == ""
        assert "foxtrot 2" in queued_line(app) and "alpha 3" in queued_line(app)
        hold.set()
        await until(pilot, lambda: len(env.fake.chat_requests) == 3 and not app.turns, timeout=30)
        await pilot.pause()
        users = [m["content"] for m in env.fake.chat_requests[2]["messages"] if m["role"] == "user"]
        assert users == ["foxtrot 1", "foxtrot 2", "alpha 3"]
        assert [b.text for b in app.conversation_view.chat_log.query(UserBubble)] == [
            "foxtrot 1",
            "foxtrot 2",
            "alpha 3",
        ]
        assert queued_line(app) == ""


@pytest.mark.slow
async def test_a_cancelled_reply_gives_the_queued_message_back_unglued(env):
    hold = threading.Event()
    env.fake.script(Reply(text="first reply", hold=hold))
    app = make(env)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await two_typed_behind_a_running_reply(app, env, pilot)
            await pilot.press("escape")
            await until(pilot, lambda: not app.turns)
            await until(pilot, lambda: "foxtrot 2" in app.conversation_view.composer.text)
            assert app.conversation_view.composer.text == "foxtrot 2\n\nalpha 3"
            assert queued_line(app) == ""
            assert len(env.fake.chat_requests) == 1
    finally:
        hold.set()
