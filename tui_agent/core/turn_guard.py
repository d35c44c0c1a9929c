"""How a turn's event stream ends when the store fails, and how an abandoned stream is closed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core.reply_keep import kept_note
from tui_agent.core.store import errors as store_errors

log = logging.getLogger("tui_agent.loop")


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
