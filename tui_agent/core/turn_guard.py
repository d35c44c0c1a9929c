"""How a turn's event stream ends when the store fails or it is cancelled, and how an abandoned
stream is closed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing
from typing import Any, TypeVar

from tui_agent.core import events as ev
from tui_agent.core.reply_keep import kept_note
from tui_agent.core.store import errors as store_errors

log = logging.getLogger("tui_agent.loop")
T = TypeVar("T")
LAST_WRITE_S = 3.0  # a cancelled turn's last write outlasts further cancels for this long at most


async def past_cancels(write: Awaitable[T], limit_s: float | None = None) -> T:
    """``write`` (what a cancelled or closed turn stores: its reply as "cancelled", its calls left)
    awaited to its end even when the turn is cancelled (again) meanwhile.

    An app that ends cancels each turn more than once (Textual cancels its workers when the app
    stops and again when their widget unmounts, ``asyncio.run`` once more at the end). A second
    cancel while the last write waits for a flush still on its way would abandon it and leave the
    reply "streaming". From the first cancel that comes during the write, the write is given
    ``limit_s`` (``LAST_WRITE_S``) more (a store that does not answer); then it is abandoned and
    the cancel goes on. No cancel is lost: the turn's own goes on with the caller's ``raise``; one
    that came while a turn closed without being cancelled is raised once the write is through."""
    task = asyncio.ensure_future(write)
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    base = me.cancelling() if me is not None else 0  # 0: the turn was closed, not cancelled
    kept = max(base, 1)  # the cancel that ends the turn stays counted
    cancelled_meanwhile = False
    deadline: float | None = None
    while not task.done():
        try:
            if deadline is None:
                await asyncio.wait([task])
            else:
                await asyncio.wait([task], timeout=max(0.0, deadline - loop.time()))
                if not task.done():
                    break
        except asyncio.CancelledError:
            cancelled_meanwhile = True
            if deadline is None:
                deadline = loop.time() + (LAST_WRITE_S if limit_s is None else limit_s)
            while me is not None and me.cancelling() > kept:
                me.uncancel()  # taken: one cancel of the turn is under way already
    if not task.done():
        task.cancel()
        log.warning("a cancelled turn's last write was abandoned: the store did not answer in time")
        raise asyncio.CancelledError
    if cancelled_meanwhile and base == 0:
        raise asyncio.CancelledError  # the turn was closed, then cancelled: that cancel goes on
    return task.result()


async def store_guarded(
    events: AsyncGenerator[ev.Event, None], conversation_id: int | None
) -> AsyncGenerator[ev.Event, None]:
    """A failure of the store (disk full, damaged file) ends the turn with an error event, not a traceback.

    Every generator of the turn is closed by the one it relays to (``aclosing``): a turn that is
    closed or cancelled between two events ends at once, its request and tools with it, and saves
    what it had (a reply as "cancelled"), rather than when the garbage collector gets to it."""
    current = conversation_id
    try:
        async with aclosing(events) as relayed:
            async for event in relayed:
                if isinstance(event, (ev.ConversationChanged, ev.BranchChanged)):
                    current = event.conversation_id
                yield event
    except store_errors.DATABASE_ERRORS as exc:
        failure = store_errors.describe(exc)
        log.error("store failure: %s", failure)
        if isinstance(exc.__context__, (GeneratorExit, asyncio.CancelledError)):
            # It failed while the turn was being closed or cancelled (saving what it had): nothing
            # more may be yielded now, and the cancel goes on.
            raise exc.__context__ from exc
        kind = "store_away" if store_errors.is_unreachable(failure) else "store"  # away: a pause (the app waits)
        kept_in = getattr(exc, "kept_in", None)
        yield ev.ErrorEvent(
            str(failure) + kept_note(exc), kind, getattr(exc, "kept_row", None), str(kept_in) if kept_in else None
        )
        yield ev.Done("error", current)


async def close_stream(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # the stream is abandoned; its own error does not matter any more
            log.debug("closing the stream failed", exc_info=True)
