"""An async iterator whose first step starts at once, in a task of its own.

The loop starts a reply's request this way before it hands the turn's first events to the screen:
the request travels (and the server starts answering) while they are drawn, instead of after.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Generic, TypeVar

T = TypeVar("T")


class Ahead(Generic[T]):
    """Iterates ``source``, whose first item is already being fetched (call it in a running loop).

    One step at a time, as with the generator itself: the first ``__anext__`` awaits the task that
    fetches the first item, later ones step the generator directly. :meth:`aclose` cancels that
    task if nobody awaited it, then closes the generator; it must be called (``finally``).
    """

    def __init__(self, source: AsyncGenerator[T, None]) -> None:
        self._source = source
        self._first: asyncio.Task[T] | None = asyncio.ensure_future(self._step())

    async def _step(self) -> T:
        return await self._source.__anext__()

    def __aiter__(self) -> Ahead[T]:
        return self

    async def __anext__(self) -> T:
        first, self._first = self._first, None
        if first is not None:
            return await first  # cancelled with the caller: awaiting a task passes cancellation on
        return await self._source.__anext__()

    async def aclose(self) -> None:
        first, self._first = self._first, None
        try:
            if first is not None:
                first.cancel()
                first.add_done_callback(_retrieve)  # its error, if any, was the request's: dropped
                await asyncio.wait([first])
        finally:  # even when cancelled again while waiting
            await self._source.aclose()


def _retrieve(task: asyncio.Task[object]) -> None:
    """Take a finished task's exception, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
