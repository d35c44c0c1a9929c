"""Typing while a long reply streams (issue 39): the reply's writes, each of which holds the event
loop while it parses, mounts, lays out and draws, start in the pauses between keys, never between a
key and its echo; a write that would not fit before the next key waits for it (ui/typing_pace)."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai import Reply, markdown_tokens
from pilot_helpers import make, send, until

from tui_agent.ui import typing_pace
from tui_agent.ui.typing_pace import MAX_WAIT_S, POLL_S, TYPING_S, TypingPace
from tui_agent.ui.widgets.bubbles import AssistantBubble


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def typed(pace: TypingPace, clock: Clock, *gaps: float) -> None:
    """Keys ``gaps`` apart, each echoed."""
    for gap in gaps:
        clock.now += gap
        pace.key()
        pace.echoed()


def test_nothing_waits_when_nobody_types():
    clock = Clock()
    pace = TypingPace(clock)
    assert pace.wait_s(5.0) == 0
    typed(pace, clock, 0.0)
    clock.now += TYPING_S
    assert pace.wait_s(5.0) == 0  # a pause that long: no longer typing


def test_a_write_waits_for_the_echo_of_a_key_then_fits_before_the_next():
    clock = Clock()
    pace = TypingPace(clock)
    typed(pace, clock, 0.0, 0.5, 0.5, 0.5)  # a key every half second
    clock.now += 0.5
    pace.key()  # not drawn yet
    assert pace.wait_s(0.0) == POLL_S
    clock.now += 0.02
    pace.echoed()
    assert pace.wait_s(0.2) == 0  # 0.2 s fits before the next key (due in 0.48 s)
    assert pace.wait_s(0.47) > 0  # this would still run when the next key comes
    clock.now += 0.3
    assert pace.wait_s(0.2) > 0  # now it would not fit either: after the next key
    clock.now += 0.5
    assert pace.wait_s(0.2) == 0  # the key is late by more than half a gap: a pause


def test_the_rhythm_follows_the_user():
    clock = Clock()
    pace = TypingPace(clock)
    typed(pace, clock, 0.0, 0.1, 0.1, 0.1)
    clock.now += 0.02
    assert pace.wait_s(0.03) == 0
    assert pace.wait_s(0.1) > 0
    typed(pace, clock, 2.0)  # after a pause: no rhythm yet, a key is due any time within TYPING_S
    assert pace.gap == TYPING_S


async def test_waiting_never_lasts_longer_than_max_wait(monkeypatch):
    monkeypatch.setattr(typing_pace, "MAX_WAIT_S", 0.05)
    pace = TypingPace()
    pace.key()  # never echoed: the wait gives up
    await asyncio.wait_for(pace.room(10.0), 10 * MAX_WAIT_S)


@pytest.mark.slow
async def test_no_write_of_a_streaming_reply_starts_between_a_key_and_its_echo(env, monkeypatch):
    monkeypatch.setattr(typing_pace, "MAX_WAIT_S", 60.0)  # a loaded host draws late: never give up here
    env.fake.script(Reply(tokens=markdown_tokens(3_000), tokens_per_s=150))  # 20 s: longer than the typing
    writes: list[tuple[bool, bool]] = []  # (typing, the last key drawn) at each write of the reply
    real_write = AssistantBubble.write

    async def write(self: AssistantBubble, fragment: str) -> None:
        pace = app.conversation_view.typing
        writes.append((pace.clock() - pace.last_key < TYPING_S, pace.echo_drawn))
        await real_write(self, fragment)

    monkeypatch.setattr(AssistantBubble, "write", write)
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "a long one", wait=False)
        await until(pilot, lambda: len(writes) >= 3, what="the reply did not start streaming")
        composer = app.conversation_view.composer
        for key in "typing":
            # A key typed (not pilot.press: it waits until every widget is idle, which a streaming
            # reply's app is not for seconds), the next once the reply moved on: a steady rhythm.
            before = len(writes)
            composer.insert(key)
            await until(None, lambda n=before: len(writes) > n, what="the reply stopped moving")
            await asyncio.sleep(0.1)
        assert app.turns, "the reply ended before the typing: make it longer"
        typed_during = [echoed for typing, echoed in writes if typing]
        assert app.conversation_view.composer.text == "typing"
        assert len(typed_during) >= 3, writes  # the reply kept moving while the user typed
        assert all(typed_during), writes  # and no write came between a key and its echo
