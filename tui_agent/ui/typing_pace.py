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
from typing import Any
from weakref import WeakKeyDictionary

#: A key within this long: the user is typing.
TYPING_S = 1.5
#: While the user types, a write waits this long after the last one began, at most.
HOLD_S = 1.5
#: A key sooner than this after the last write is let go by for a later one.
MIN_GAP_S = 0.25
#: A key within this long: work that would keep the next key waiting (a thaw) waits for a pause.
PAUSE_S = 0.6
#: A write goes "right behind" a key if it starts within this long of it; a key that came while
#: the last write still ran is let go by (the write would start late, nearer the next key).
BEHIND_S = 0.15


class TypingPace:
    def __init__(self) -> None:
        self.clock = time.monotonic
        self.last_key = float("-inf")
        self._waiting: set[asyncio.Future[Any]] = set()

    def typed(self) -> None:
        """A key edited the composer's text (called from its key handler, after the key's draw)."""
        self.last_key = self.clock()
        self._wake()

    def sent(self) -> None:
        """A message was sent (Enter): the keys that wrote it were not typed during a reply."""
        self.last_key = float("-inf")
        self._wake()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, set()
        for future in waiting:
            if not future.done():
                future.set_result(None)

    def typing(self, within: float = PAUSE_S) -> bool:
        """A key came less than ``within`` seconds ago."""
        return self.clock() - self.last_key < within

    async def until_paused(self, quiet: float = PAUSE_S) -> None:
        """Return once no key has come for ``quiet`` seconds (at once if none has, or after a send)."""
        never = asyncio.Event()
        while (wait := self.last_key + quiet - self.clock()) > 0:
            await self._next_key(never, wait)

    async def turn(self, last_write: float, stopping: asyncio.Event) -> None:
        """Return when a write may go ahead: at once unless the user is typing; else right behind
        the first key that comes ``MIN_GAP_S`` or more after ``last_write``, ``HOLD_S`` after
        ``last_write`` at most, once the keys stop, or when ``stopping`` is set."""
        while not stopping.is_set():
            now = self.clock()
            if now - self.last_key > TYPING_S:
                return
            if self.last_key - last_write >= MIN_GAP_S and now - self.last_key <= BEHIND_S:
                return  # right behind a key
            wait = min(last_write + HOLD_S, self.last_key + TYPING_S) - now
            if wait <= 0:
                return
            await self._next_key(stopping, wait)

    async def _next_key(self, stopping: asyncio.Event, timeout: float) -> None:
        """Until the next key (or a send), ``stopping``, or ``timeout``; each waiter has its own
        future, so a key wakes every stream that waits for it."""
        key: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.add(key)
        stop: asyncio.Future[Any] = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait([key, stop], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiting.discard(key)
            key.cancel()
            stop.cancel()


_PACES: WeakKeyDictionary[object, TypingPace] = WeakKeyDictionary()


def pace_of(app: object) -> TypingPace:
    """The app's pace: one per app, kept with it (the tests run several apps in one process)."""
    pace = _PACES.get(app)
    if pace is None:
        pace = _PACES[app] = TypingPace()
    return pace
