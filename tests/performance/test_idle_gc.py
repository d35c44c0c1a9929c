"""Full collections happen between replies, when the app is idle, not in the middle of one."""

from __future__ import annotations

import gc
import time
from types import SimpleNamespace

import pytest
from pilot_helpers import running, send, settle

from tui_agent.ui import gc_tuning


class Clock:
    """The idle collector's clock, moved by the test: "the user typed for a while" is then a fact of
    the test, not of how fast a loaded machine runs it (its timers still run on real time, and a
    late timer only looks at this clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(gc_tuning, "time", SimpleNamespace(monotonic=clock.monotonic, perf_counter=time.perf_counter))
    return clock


async def checked(app, pilot, clock: Clock, timeout: float = 20.0) -> None:
    """The user does nothing from now on: until the idle collector's pending check has run (it ran
    once no timer is pending). The clock moves on while we wait, so a check put off by input the
    app handled late (a scroll event after the clock moved) still finds the user idle."""
    deadline = time.monotonic() + timeout
    while app.idle_gc._timer is not None:
        assert time.monotonic() < deadline, "the idle check never ran"
        clock.advance(gc_tuning.IDLE_S)
        await pilot.pause(0.05)


def _collector_near(monkeypatch, gen1: int) -> list[int]:
    """The collector's gen-1 count as ``gen1``; returns the generations collected by hand."""
    collected: list[int] = []
    real_collect = gc.collect

    def collect(generation: int = 2) -> int:
        collected.append(generation)
        return real_collect(generation)

    monkeypatch.setattr(gc, "get_count", lambda: (0, 0, gen1))
    monkeypatch.setattr(gc, "collect", collect)
    return collected


async def test_a_full_collection_runs_after_a_reply_once_the_app_is_idle(env, monkeypatch, clock):
    async with running(env, "A reply.") as (app, pilot):
        await settle(app, pilot)
        collected = _collector_near(monkeypatch, gc.get_threshold()[2])
        await send(app, pilot, "hello")
        assert collected == []  # not while the reply streamed
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await checked(app, pilot, clock)
        assert collected == [2] and app.idle_gc.collections == 1


@pytest.mark.slow
async def test_typing_puts_it_off_and_a_collector_far_from_its_own_skips_it(env, monkeypatch, clock):
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        collected = _collector_near(monkeypatch, gc.get_threshold()[2])
        app.idle_gc.turn_ended()
        for _ in range(4):  # the user types through the idle delay, a key every half of it
            clock.advance(gc_tuning.IDLE_S / 2)
            await pilot.press("x")
            await pilot.pause(gc_tuning.IDLE_S / 2)  # real time passes too: the timer comes due
        assert collected == []
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await checked(app, pilot, clock)
        assert collected == [2]  # after the typing paused
        monkeypatch.setattr(gc, "get_count", lambda: (0, 0, 1))  # the collector's own is far away
        app.idle_gc.turn_ended()
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await checked(app, pilot, clock)
        assert collected == [2]


async def test_it_can_be_turned_off_for_measurements(env, monkeypatch, clock):
    monkeypatch.setenv(gc_tuning.IDLE_ENV, "0")
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        collected = _collector_near(monkeypatch, 100)
        app.idle_gc.turn_ended()
        assert app.idle_gc._timer is None  # nothing scheduled at all
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await pilot.pause(gc_tuning.IDLE_S + 0.1)
        assert collected == []


@pytest.mark.slow
async def test_pages_released_by_scrolling_are_collected_once_the_scrolling_pauses(env, monkeypatch, clock):
    """Scrolling far releases pages of widgets, whose reference cycles only a full collection frees:
    left to the collector, ~200 messages' worth came due at once under the user's PageUps. Once
    scrolling that released a page pauses, the app collects, even far from the collector's own."""
    from test_perf_ui import _long_conversation

    from tui_agent.core.store import history
    from tui_agent.ui.widgets.chat_log import KEEP

    history.remember_conversation(_long_conversation(300))
    async with running(env) as (app, pilot):
        await pilot.pause(1.0)
        log = app.conversation_view.chat_log
        collected = _collector_near(monkeypatch, 1)  # the collector's own is far away
        released = False
        for _ in range(200):  # PageUp, well within the idle delay each time, until a page is released
            log.scroll_page_up(animate=False)
            clock.advance(gc_tuning.IDLE_S / 6)
            await pilot.pause(gc_tuning.IDLE_S / 6)
            await app.workers.wait_for_complete()
            released = released or app.idle_gc._released
            assert collected == []  # never while scrolling
            if released and len(log.children) <= KEEP:
                break
        assert released, "scrolling up never released a page"
        for _ in range(4):  # still scrolling (within the page): nothing yet
            log.scroll_up(animate=False)
            clock.advance(gc_tuning.IDLE_S / 2)
            await pilot.pause(gc_tuning.IDLE_S / 2)
        assert collected == []
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await checked(app, pilot, clock)
        assert collected == [2] and not app.idle_gc._released
        log.scroll_up(animate=False)  # scrolling that released nothing: no collection
        clock.advance(gc_tuning.IDLE_S + 0.1)
        await pilot.pause(gc_tuning.IDLE_S + 0.1)
        await checked(app, pilot, clock)
        assert collected == [2]


@pytest.fixture(autouse=True)
def no_hold_left():
    """Each test starts with no hold on the collector and leaves none (a hold is process-wide)."""
    assert not gc_tuning._held_by
    base = gc.get_threshold()
    yield
    for owner in list(gc_tuning._held_by):
        gc_tuning.release_full(owner)
    gc.set_threshold(*base)


async def until_true(pilot, condition, clock: Clock | None = None, timeout: float = 20.0) -> None:
    """Until ``condition()``; the idle collector's clock moves on meanwhile if given (the user idle)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        if clock is not None:
            clock.advance(gc_tuning.HOLD_CHECK_S)
        await pilot.pause(0.05)


def held_reply(gate):
    from fake_openai import Reply

    return Reply(text="words " * 40, chunk_size=6, hold=gate, hold_after_chunks=5)


async def type_keys(pilot, clock: Clock, count: int) -> None:
    """The user types ``count`` keys, well within the idle delay of each other."""
    for _ in range(count):
        clock.advance(gc_tuning.IDLE_S / 3)
        await pilot.press("x")
        await pilot.pause(gc_tuning.HOLD_CHECK_S)


async def test_typing_during_a_reply_holds_the_full_collection_until_the_typing_pauses(env, clock):
    """The collector's own full collection (80-240 ms late in an 8,000-token reply, every ~2 s of
    it) met the user's keys: while they type during a reply its count must reach ``HOLD`` times
    the threshold; once the typing pauses the threshold is back (the reply still streaming)."""
    import threading

    gate = threading.Event()
    base = gc.get_threshold()
    held = (*base[:2], base[2] * gc_tuning.HOLD)
    async with running(env, held_reply(gate)) as (app, pilot):
        await settle(app, pilot)
        try:
            await send(app, pilot, "hello", wait=False)
            await until_true(pilot, lambda: bool(app.turns))
            await pilot.pause(0.2)
            assert gc.get_threshold() == base and not app.idle_gc.holding  # sent, nobody types under it
            await type_keys(pilot, clock, 3)
            assert app.idle_gc.holding and gc.get_threshold() == held
            await until_true(pilot, lambda: not app.idle_gc.holding, clock)  # the typing paused
            assert gc.get_threshold() == base
            assert app.turns  # the reply still runs
        finally:
            gate.set()


async def test_a_held_collection_near_its_bound_runs_right_behind_a_key(env, monkeypatch, clock):
    """Typing on through a long reply brings the held collection to its bound: the app runs it
    just after a key (the key's echo out first), not wherever the collector's own would land."""
    import threading

    gate = threading.Event()
    base = gc.get_threshold()
    async with running(env, held_reply(gate)) as (app, pilot):
        await settle(app, pilot)
        try:
            await send(app, pilot, "hello", wait=False)
            await until_true(pilot, lambda: bool(app.turns))
            await type_keys(pilot, clock, 1)
            assert app.idle_gc.holding
            collected = _collector_near(monkeypatch, base[2] * gc_tuning.HOLD - gc_tuning.EARLY - 1)
            await type_keys(pilot, clock, 2)
            assert collected == []  # not near yet
            collected = _collector_near(monkeypatch, base[2] * gc_tuning.HOLD - 1)
            await pilot.press("x")
            await until_true(pilot, lambda: bool(collected))
            assert collected == [2] and app.idle_gc.holding
        finally:
            gate.set()


async def test_typing_on_after_the_reply_ended_still_collects_between_replies(env, monkeypatch, clock):
    """The hold outlives the reply while the user types on; the between-replies collection then
    still sees the collector near its own (the threshold without the hold), and runs it."""
    import threading

    gate = threading.Event()
    base = gc.get_threshold()
    async with running(env, held_reply(gate)) as (app, pilot):
        await settle(app, pilot)
        await send(app, pilot, "hello", wait=False)
        await until_true(pilot, lambda: bool(app.turns))
        await type_keys(pilot, clock, 2)
        assert app.idle_gc.holding
        collected = _collector_near(monkeypatch, base[2] - 2)  # near, not yet due
        gate.set()
        await until_true(pilot, lambda: not app.turns)
        await type_keys(pilot, clock, 2)  # typing on after the reply
        assert collected == [] and app.idle_gc.holding
        clock.advance(gc_tuning.IDLE_S + 0.1)
        # The between-replies check comes before the hold's own look at the pause (which runs
        # every HOLD_CHECK_S): it ends the hold and judges "near" by the threshold without it.
        app.idle_gc._maybe_collect()
        assert collected == [2] and gc.get_threshold() == base and not app.idle_gc.holding


async def test_typing_with_no_reply_running_holds_nothing(env, clock):
    base = gc.get_threshold()
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        await type_keys(pilot, clock, 2)
        assert not app.idle_gc.holding and gc.get_threshold() == base


async def test_the_app_s_end_puts_the_thresholds_back(env, clock):
    import threading

    gate = threading.Event()
    base = gc.get_threshold()
    try:
        async with running(env, held_reply(gate)) as (app, pilot):
            await settle(app, pilot)
            await send(app, pilot, "hello", wait=False)
            await until_true(pilot, lambda: bool(app.turns))
            await pilot.press("x")
            await pilot.pause(0.1)
            assert app.idle_gc.holding and gc.get_threshold()[2] == base[2] * gc_tuning.HOLD
        assert gc.get_threshold() == base and not gc_tuning._held_by  # the app ended while the user typed
    finally:
        gate.set()


def test_holds_nest_and_the_last_release_puts_the_thresholds_back():
    base = gc.get_threshold()
    gc_tuning.hold_full("a")
    gc_tuning.hold_full("b")
    assert gc.get_threshold() == (*base[:2], base[2] * gc_tuning.HOLD)
    assert gc_tuning.unheld_threshold() == base
    gc_tuning.release_full("a")
    gc_tuning.release_full("a")  # twice: nothing more
    assert gc.get_threshold()[2] == base[2] * gc_tuning.HOLD
    gc_tuning.release_full("b")
    assert gc.get_threshold() == base
