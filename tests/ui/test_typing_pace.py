"""While the user types, a streaming reply is written right behind each key, never under it
(ui/typing_pace.py): the pace itself on a clock of the test's, then in the app with a real reply
streaming from the loopback server. Nothing is lost: the reply ends whole."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fake_openai import Reply, markdown_tokens
from pilot_helpers import make, send, settle, until

from tui_agent.ui.typing_pace import HOLD_S, MIN_GAP_S, TYPING_S, TypingPace, pace_of
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def paced() -> tuple[TypingPace, Clock]:
    pace, clock = TypingPace(), Clock()
    pace.clock = clock
    return pace, clock


def write_behind_a_key() -> tuple[TypingPace, Clock, float, asyncio.Future[None]]:
    """A key typed, the reply written right behind it, and the next write asking when it may go:
    ``(pace, clock, when the last write was, that next write's turn)``."""
    pace, clock = paced()
    pace.typed()
    last_write = clock.now
    return pace, clock, last_write, asyncio.ensure_future(pace.turn(last_write, asyncio.Event()))


async def settled(task: asyncio.Task[None]) -> bool:
    for _ in range(5):
        await asyncio.sleep(0)
    return task.done()


async def test_nothing_is_held_when_nobody_types_or_once_the_message_is_sent():
    pace, clock = paced()
    assert await settled(asyncio.ensure_future(pace.turn(clock.now - 0.01, asyncio.Event())))
    pace.typed()
    pace.sent()  # the keys that wrote the message, then Enter: the reply's first words at once
    assert await settled(asyncio.ensure_future(pace.turn(clock.now - 0.01, asyncio.Event())))
    clock.now += TYPING_S + 0.01  # the last key long ago
    pace.typed()
    clock.now += TYPING_S + 0.01
    assert await settled(asyncio.ensure_future(pace.turn(clock.now - 0.01, asyncio.Event())))


async def test_while_keys_come_a_write_waits_for_the_next_key():
    pace, clock, _written, turn = write_behind_a_key()
    assert not await settled(turn)
    clock.now += MIN_GAP_S
    pace.typed()
    assert await settled(turn)


async def test_a_key_too_soon_after_the_last_write_is_let_go_by_for_a_later_one():
    pace, clock, last_write, turn = write_behind_a_key()
    clock.now += MIN_GAP_S / 5
    pace.typed()  # a fast typist: the write would be under the next key
    assert not await settled(turn)
    clock.now = last_write + MIN_GAP_S
    assert not await settled(turn)  # the gap alone is not enough: a key
    pace.typed()
    assert await settled(turn)


async def test_a_write_waits_no_longer_than_hold_s_and_never_once_the_stream_stops():
    pace, clock, last_write, turn = write_behind_a_key()
    assert not await settled(turn)
    clock.now = last_write + HOLD_S
    await asyncio.wait_for(turn, 10)  # its wait was at most HOLD_S (real time), then the clock said go

    stopping = asyncio.Event()
    pace.typed()
    turn = asyncio.ensure_future(pace.turn(clock.now, stopping))
    assert not await settled(turn)
    stopping.set()
    assert await settled(turn)


async def test_each_app_has_its_own_pace():
    one, other = object.__new__(type("A", (), {})), object.__new__(type("B", (), {}))
    assert pace_of(one) is pace_of(one)
    assert pace_of(one) is not pace_of(other)


@pytest.mark.slow
async def test_in_the_app_the_reply_is_written_behind_the_keys_and_ends_whole(env, monkeypatch):
    """A reply streams; keys are typed on the test's clock. While keys come,
    each write of the reply follows a key; once they stop, the reply flows again and ends whole."""
    clock = Clock()
    writes: list[float] = []
    real_append = ReplyMarkdown.append

    def append(self, markdown):
        writes.append(clock.now)
        return real_append(self, markdown)

    monkeypatch.setattr(ReplyMarkdown, "append", append)
    tokens = markdown_tokens(600)
    # The server holds its last pieces until the keys have stopped: on a loaded machine the reply
    # could otherwise end while the keys were still coming (its end writes at once).
    keys_stopped = threading.Event()
    env.fake.script(Reply(tokens=tokens, tokens_per_s=100, hold=keys_stopped, hold_after_chunks=len(tokens) - 10))
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        pace_of(app).clock = clock
        composer = app.conversation_view.composer
        await send(app, pilot, "go", wait=False)
        await until(pilot, lambda: writes, what="the reply's first words")
        clock.now += MIN_GAP_S
        await pilot.press("a")  # typing starts: the next write goes right behind this key
        await until(pilot, lambda: writes[-1] == clock.now, what="a write behind the key")
        held = len(writes)
        await pilot.pause(0.4)  # tokens keep coming; the clock stands still: no key, no write
        assert len(writes) == held
        clock.now += MIN_GAP_S
        await pilot.press("b")
        await until(pilot, lambda: len(writes) > held, what="the write behind the second key")
        assert composer.text.endswith("ab")
        clock.now += TYPING_S + 0.01  # the keys stopped: the reply flows again
        keys_stopped.set()
        await until(pilot, lambda: len(writes) > held + 1, what="a write after the typing stopped, with no key")
        await settle(app, pilot)
        (bubble,) = app.query(AssistantBubble)
        assert bubble.text == "".join(tokens)
        assert bubble.query(ReplyMarkdown).last().source.endswith("ENDOFREPLY")


async def test_only_a_key_that_edits_the_text_is_typing(env):
    """Scrolling the log, moving to the messages, a key for the app: not typing (the reply would
    be held for nothing). A letter, Backspace, a new line: typing. Enter with a message: sent."""
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        pace = pace_of(app)
        composer = app.conversation_view.composer
        composer.focus()
        for key in ("pageup", "pagedown", "f20"):
            await pilot.press(key)
            await pilot.pause()
            assert pace.last_key == float("-inf"), key
        await pilot.press("up")  # an empty composer: the message cursor
        await pilot.pause()
        assert pace.last_key == float("-inf")
        composer.focus()
        typed = []
        for key in ("x", "backspace", "ctrl+j"):
            pace.last_key = float("-inf")
            await pilot.press(key)
            await pilot.pause()
            typed.append(pace.last_key > float("-inf"))
        assert typed == [True, True, True]
        await pilot.press("y", "enter")
        await pilot.pause()
        assert pace.last_key == float("-inf")  # sent


async def test_a_key_wakes_every_stream_waiting_for_it():
    pace, clock = paced()
    pace.typed()
    last_write = clock.now
    turns = [asyncio.ensure_future(pace.turn(last_write, asyncio.Event())) for _ in range(2)]
    assert not await settled(turns[0]) and not await settled(turns[1])
    clock.now += MIN_GAP_S
    pace.typed()
    assert await settled(turns[0]) and await settled(turns[1])


async def test_a_key_that_came_while_the_last_write_ran_is_let_go_by():
    """A write starting long after its key would run into the next key: it waits for another."""
    pace, clock = paced()
    last_write = clock.now
    clock.now += MIN_GAP_S
    pace.typed()  # the write before is still running
    clock.now += 0.5  # it ends; the stream asks for its next turn
    turn = asyncio.ensure_future(pace.turn(last_write, asyncio.Event()))
    assert not await settled(turn)
    pace.typed()
    assert await settled(turn)
