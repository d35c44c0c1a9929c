"""The app's end (ui/app_end.py): the turns it cancelled end first, then the store writes what it
was given, then what the app started closes; each step bounded, none skipped."""

from __future__ import annotations

import asyncio
import time

from tui_agent.core.store import worker
from tui_agent.ui import app_end


def _slow_write(written: list[str], seconds: float) -> None:
    time.sleep(seconds)
    written.append("written")


class _Stuck:
    """A turn that does not end (whatever it waits for ignores the cancel)."""

    async def wait(self) -> None:
        await asyncio.Event().wait()


class _Ended:
    def __init__(self) -> None:
        self.waited = False

    async def wait(self) -> None:
        self.waited = True


async def test_a_turn_that_does_not_end_does_not_take_the_stores_other_writes_with_it(monkeypatch):
    monkeypatch.setattr(app_end, "STORE_DRAIN_S", 0.2)
    written: list[str] = []
    write = asyncio.ensure_future(worker.run(_slow_write, written, 0.3))
    await asyncio.sleep(0)  # given to the store before the end
    closed: list[str] = []

    async def close() -> None:
        closed.append("mcp")

    await app_end.ended([_Stuck()], [close])  # type: ignore[list-item]
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
