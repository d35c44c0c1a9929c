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


def _nothing() -> None:
    """Run on the store's thread after everything given to it before."""


async def turns_ended(turns: Iterable[Worker[None]]) -> None:
    """Until each of ``turns`` (cancelled or not) has ended, however it ended."""
    for turn in list(turns):
        with contextlib.suppress(WorkerError):  # cancelled, failed, never started: ended all the same
            await turn.wait()


async def ended(turns: Iterable[Worker[None]], closers: Iterable[Callable[[], Awaitable[None]]]) -> None:
    """The app's ``on_unmount``: its screens are gone and its ``turns`` cancelled; ``closers`` end
    what it started (MCP servers, model clients), in order, once the store has its work done."""
    profiles.set_run_profile(None)  # --profile was for this run of the app only
    try:
        async with asyncio.timeout(STORE_DRAIN_S):
            # The turns this shutdown cancelled hand the store their replies (stored as cancelled);
            # a reply's last write may first wait for a flush on its way. Once they have ended, the
            # store is given nothing more: what it was given is written.
            await turns_ended(turns)
            await worker.run(_nothing)
    except Exception:  # the server away: what waited is lost with the app (its replies: see lifeline)
        log.warning("the store did not finish its work before the app ended")
    for close in closers:
        await close()
