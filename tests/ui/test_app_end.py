"""The app's end (ui/app_end.py): the turns it cancelled end first, then the store writes what it
was given, then what the app started closes; each step bounded, none skipped."""

from __future__ import annotations

import asyncio
import time

from textual.app import App
from textual.worker import WorkerCancelled, WorkerState

from tui_agent.core.store import worker
from tui_agent.ui import app_end


def _slow_write(written: list[str], seconds: float) -> None:
    time.sleep(seconds)
    written.append("written")


class _Stuck:
    """A turn that does not end (whatever it waits for ignores the cancel). Its ``wait`` does what
    Textual's ``Worker.wait`` does when its waiter is cancelled: raises WorkerCancelled, not
    CancelledError (test_textual_worker_wait_takes_its_waiters_cancel_for_the_workers)."""

    async def wait(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise WorkerCancelled("Worker was cancelled, and did not return a result.") from None


class _Ended:
    def __init__(self) -> None:
        self.waited = False

    async def wait(self) -> None:
        self.waited = True


async def test_a_turn_that_does_not_end_does_not_take_the_stores_other_writes_with_it(monkeypatch):
    monkeypatch.setattr(app_end, "STORE_DRAIN_S", 0.2)
    monkeypatch.setattr(app_end, "DRAIN_AT_LEAST_S", 600.0)  # bounds a store that hangs; this one answers
    written: list[str] = []
    write = asyncio.ensure_future(worker.run(_slow_write, written, 0.3))
    await asyncio.sleep(0)  # given to the store before the end
    closed: list[str] = []

    async def close() -> None:
        closed.append("mcp")

    # 60 s: bounds a test that fails (the end waiting for good on the second stuck turn)
    await asyncio.wait_for(app_end.ended([_Stuck(), _Stuck()], [close]), 60)  # type: ignore[list-item]
    assert written == ["written"]  # before the app ended, though the turn never did
    assert closed == ["mcp"]
    await write


async def test_every_turn_is_waited_for_and_the_store_drained_before_anything_closes():
    turns = [_Ended(), _Ended()]
    written: list[str] = []
    write = asyncio.ensure_future(worker.run(_slow_write, written, 0.1))
    await asyncio.sleep(0)  # given to the store before the end
    seen: list[tuple[bool, list[str]]] = []

    async def close() -> None:
        seen.append((all(t.waited for t in turns), list(written)))

    await app_end.ended(turns, [close])  # type: ignore[arg-type]
    assert seen == [(True, ["written"])]
    await write


async def test_textual_worker_wait_takes_its_waiters_cancel_for_the_workers():
    """Why turns_ended waits for each turn in a task of its own: a cancel of a task awaiting
    ``Worker.wait()`` (a timeout's) reaches the worker and comes out as WorkerCancelled, not as
    CancelledError, so a timeout around a loop of waits would end only the first one."""
    app: App[None] = App()
    async with app.run_test():
        turn = app.run_worker(asyncio.Event().wait())
        waiting = asyncio.ensure_future(turn.wait())
        await asyncio.sleep(0.05)
        waiting.cancel()
        try:
            await waiting
        except WorkerCancelled:
            pass  # the waiter's cancel, reported as the worker's
        except asyncio.CancelledError:
            raise AssertionError(
                "Worker.wait lets its waiter's cancel through now: turns_ended can be simpler"
            ) from None
        else:
            raise AssertionError("Worker.wait returned while its worker runs")
        assert turn.state == WorkerState.CANCELLED
