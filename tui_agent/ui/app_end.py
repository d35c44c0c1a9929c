"""How the app ends: the turns its shutdown cancelled store their replies, the store writes what
it was given, the MCP servers and the model clients close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable

from textual.worker import Worker, WorkerError

from tui_agent.core import profiles
from tui_agent.core.store import worker

log = logging.getLogger("tui_agent.ui")
STORE_DRAIN_S = 3.0  # at the end, the turns and the store's thread finish their work for this long at most
DRAIN_AT_LEAST_S = 0.5  # the store's own share of that, however long the turns took


def _nothing() -> None:
    """Run on the store's thread after everything given to it before."""


async def turns_ended(turns: Iterable[Worker[None]], timeout_s: float) -> bool:
    """Until each of ``turns`` (cancelled or not) has ended, however it ended, for ``timeout_s`` at
    most: whether they all did. (Each is waited for in a task of its own: Textual's ``Worker.wait``
    takes a cancel of its waiter for the worker's own and raises WorkerCancelled, so a timeout
    around it would end only the wait for the first turn.)"""
    waits = [asyncio.ensure_future(_ended(turn)) for turn in turns]
    if not waits:
        return True
    _, pending = await asyncio.wait(waits, timeout=timeout_s)
    for wait in pending:
        wait.cancel()
    return not pending


async def _ended(turn: Worker[None]) -> None:
    with contextlib.suppress(WorkerError):  # cancelled, failed, never started: ended all the same
        await turn.wait()


async def ended(turns: Iterable[Worker[None]], closers: Iterable[Callable[[], Awaitable[None]]]) -> None:
    """The app's ``on_unmount``: its screens are gone and its ``turns`` cancelled; ``closers`` end
    what it started (MCP servers, model clients), in order, once the store has its work done."""
    profiles.set_run_profile(None)  # --profile was for this run of the app only
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STORE_DRAIN_S
    # The turns this shutdown cancelled hand the store their replies (stored as cancelled); a
    # reply's last write may first wait for a flush on its way.
    if not await turns_ended(turns, STORE_DRAIN_S):
        log.warning("a turn had not ended when the app ended")
    try:
        # Then what the store was given is written (a turn that did not end does not take the
        # others' writes with it: the drain has DRAIN_AT_LEAST_S in any case).
        async with asyncio.timeout_at(max(deadline, loop.time() + DRAIN_AT_LEAST_S)):
            await worker.run(_nothing)
    except Exception:  # the server away: what waited is lost with the app (its replies: see lifeline)
        log.warning("the store did not finish its work before the app ended")
    for close in closers:
        await close()
