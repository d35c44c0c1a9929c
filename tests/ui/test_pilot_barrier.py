"""tests/pilot_barrier.py: ``Pilot.pause()`` waits for the widgets that have work and skips only
those waiting for a message. What it reads of Textual and asyncio still exists and means what it
needs; a pause still waits for a handler in progress and for queued messages."""

from __future__ import annotations

import asyncio

from pilot_barrier import wait_for_busy_pumps, waiting
from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Static


class Slow(Message):
    pass


class Worker(Static):
    """Handles ``Slow`` over several turns of the event loop, each awaited; ``held`` keeps a
    handler waiting until the test lets it go."""

    handled = 0

    def on_mount(self) -> None:
        self.started = asyncio.Event()
        self.held = asyncio.Event()
        self.held.set()

    async def on_slow(self, message: Slow) -> None:
        self.started.set()
        await self.held.wait()
        for _ in range(10):
            await asyncio.sleep(0.02)
        self.handled += 1


class Many(App[None]):
    def compose(self) -> ComposeResult:
        yield Worker("worker", id="worker")
        for i in range(300):
            yield Static(f"line {i}")


def test_the_run_uses_this_barrier_for_every_pause():
    assert Pilot._wait_for_screen is wait_for_busy_pumps


async def test_pause_still_calls_the_barrier_it_replaces(monkeypatch):
    """Textual's ``Pilot.pause`` goes through ``_wait_for_screen`` (the name patched)."""
    called = []

    async def spy(pilot, timeout=30.0):
        called.append(pilot)
        return True

    app = Many()
    async with app.run_test() as pilot:
        monkeypatch.setattr(Pilot, "_wait_for_screen", spy)
        await pilot.pause()
        await pilot.pause(0.01)
    assert len(called) == 2


async def test_a_widget_is_waiting_only_with_nothing_queued_and_nothing_in_hand():
    """``MessagePump._message_queue`` is Textual's queue, whose ``ready_event`` (an asyncio.Event)
    the pump's own task waits on while idle: waiting then, not while a message is queued or being
    handled."""
    app = Many()
    async with app.run_test() as pilot:
        worker = app.query_one(Worker)
        await pilot.pause()
        queue = vars(worker)["_message_queue"]
        assert isinstance(queue.ready_event, asyncio.Event)
        assert len(queue.ready_event._waiters) == 1
        assert waiting(worker)
        worker.held.clear()
        try:
            worker.post_message(Slow())
            assert not waiting(worker)  # queued
            await worker.started.wait()
            assert queue.empty()
            assert not waiting(worker)  # in hand: the handler awaits
        finally:
            worker.held.set()  # else the app's end waits for the handler
        await pilot.pause()
        assert worker.handled == 1
        assert waiting(worker)


async def test_a_pause_waits_for_a_handler_in_progress_and_for_queued_messages():
    app = Many()
    async with app.run_test() as pilot:
        worker = app.query_one(Worker)
        await pilot.pause()
        worker.post_message(Slow())
        await worker.started.wait()  # in hand, its queue empty: the pause waits for it all the same
        await pilot.pause()
        assert worker.handled == 1
        worker.post_message(Slow())
        worker.post_message(Slow())
        await pilot.pause()
        assert worker.handled == 3


async def test_a_pause_posts_nothing_to_widgets_that_wait(monkeypatch):
    app = Many()
    async with app.run_test() as pilot:
        await pilot.pause()
        posted = []
        for widget in app.screen.walk_children():
            real = widget.call_later

            def counting(callback, *args, real=real, widget=widget, **kwargs):
                posted.append(widget)
                return real(callback, *args, **kwargs)

            monkeypatch.setattr(widget, "call_later", counting)
        assert await wait_for_busy_pumps(pilot)
        assert len(app.screen.walk_children()) > 300
        assert len(posted) < 10, posted
