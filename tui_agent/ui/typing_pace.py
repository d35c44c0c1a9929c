"""While the user types, a streaming reply is drawn between the keys, not under them.

A long Markdown reply at a fast provider's rate keeps the app busy: each write is parsed, its new
blocks mounted and styled, and the screen laid out and drawn again (100 ms or more a frame on a
slow machine). A key that arrives while one of those runs waits for it. So while keys come (one
within ``TYPING_S``), a reply's next write waits for the moment right after a key, when the next
key is least likely to come at once, and then writes everything that arrived meanwhile in one
piece; it waits ``HOLD_S`` after its last write at most, so the reply never stands still for
longer than that. A key less than ``MIN_GAP_S`` after the last write is let go by (a fast
typist's keys would otherwise each bring a frame, and the next key would wait for it). Nothing
is held once the user stops typing, sends, or the reply ends, and no text waits anywhere but in
the stream's own queue.
"""

from __future__ import annotations

import asyncio
import time
from weakref import WeakKeyDictionary

#: A key within this long: the user is typing.
TYPING_S = 1.5
#: While the user types, a write waits this long after the last one at most.
HOLD_S = 1.5
#: A key sooner than this after the last write is let go by for a later one.
MIN_GAP_S = 0.25


class TypingPace:
    def __init__(self) -> None:
        self.clock = time.monotonic
        self.last_key = float("-inf")
        self._key = asyncio.Event()

    def typed(self) -> None:
        """A key reached the composer (called from its key handler, after the key's own draw)."""
        self.last_key = self.clock()
        self._key.set()

    def sent(self) -> None:
        """A message was sent (Enter): the keys that wrote it were not typed during a reply."""
        self.last_key = float("-inf")
        self._key.set()

    async def turn(self, last_write: float, stopping: asyncio.Event) -> None:
        """Return when a write may go ahead: at once unless the user is typing; else right after
        the first key that comes ``MIN_GAP_S`` or more after ``last_write``, ``HOLD_S`` after
        ``last_write`` at most, once the keys stop, or when ``stopping`` is set."""
        while not stopping.is_set():
            now = self.clock()
            if now - self.last_key > TYPING_S:
                return
            if self.last_key > last_write and now - last_write >= MIN_GAP_S:
                return  # right behind a key
            wait = min(last_write + HOLD_S, self.last_key + TYPING_S) - now
            if wait <= 0:
                return
            self._key.clear()  # the next key (one too soon after the last write waits for a later one)
            await _first_of(self._key, stopping, timeout=wait)


async def _first_of(one: asyncio.Event, other: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(one.wait()), asyncio.ensure_future(other.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()


_PACES: WeakKeyDictionary[object, TypingPace] = WeakKeyDictionary()


def pace_of(app: object) -> TypingPace:
    """The app's pace (one per app: the served app runs several in one process)."""
    pace = _PACES.get(app)
    if pace is None:
        pace = _PACES[app] = TypingPace()
    return pace
