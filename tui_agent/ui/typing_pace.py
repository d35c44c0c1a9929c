"""Work that holds the event loop for a while waits for a pause between two keys.

Textual draws a typed key at the next refresh, once the event loop is free. A write to a long
streaming Markdown reply holds the loop while it parses, mounts, lays out and draws (50-300 ms
late in a long reply at 400 tokens a second), and a key pressed meanwhile echoed only after it:
typing felt sticky while a long reply streamed. People type in a rhythm: the next key is due
about one gap after the last. So, while the user types, such work starts only when it fits before
the next key is due (right after a key's echo is drawn, most often), and work that does not fit
waits for the next key and its echo. Never longer than ``MAX_WAIT_S``: the reply keeps moving
while someone types without a pause. When nobody types, nothing waits.

(No Textual import: the conversation view tells it of each key and of each key's echo drawn.)"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

TYPING_S = 1.5  # a key within this of the last one: the user is typing
MAX_WAIT_S = 1.0  # the longest a piece of work waits for a pause
MARGIN_S = 0.03  # kept free before the next key is due
POLL_S = 0.01


class TypingPace:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.last_key = -math.inf
        self.gap = TYPING_S  # the time between two keys, as the user types now
        self.echo_drawn = True
        self.work_cost = 0.0  # what the last piece of work held the loop for, to the frame that drew it
        self._work_from: float | None = None

    def key(self) -> None:
        """A key changed the composer (its echo is drawn at the next refresh)."""
        now = self.clock()
        gap = now - self.last_key
        if gap < TYPING_S:
            self.gap = gap if self.gap >= TYPING_S else (self.gap + gap) / 2
        else:
            self.gap = TYPING_S  # typing (again) after a pause: no rhythm yet
        self.last_key = now
        self.echo_drawn = False

    def echoed(self) -> None:
        """The refresh after the last key is drawn: the key is on screen."""
        self.echo_drawn = True

    def frame_drawn(self) -> None:
        """A layout and its frame are drawn: the work started before them is done."""
        if self._work_from is not None:
            took = self.clock() - self._work_from
            self.work_cost = max(took, self.work_cost * 0.7)  # up at once, down slowly
            self._work_from = None

    def wait_s(self, cost: float) -> float:
        """How long work that holds the loop for ``cost`` seconds should wait before it starts (0: now)."""
        since = self.clock() - self.last_key
        if since >= TYPING_S:
            return 0.0
        if not self.echo_drawn:
            return POLL_S  # the key first
        due = self.gap - since  # until the next key, if the rhythm holds
        if cost + MARGIN_S <= due or due < -self.gap / 2:
            return 0.0  # it fits before the next key, or the next key is late: a pause
        return POLL_S

    async def room(self, cost: float) -> None:
        """Return once work of ``cost`` seconds (or of what the last work cost, to the frame that
        drew it, if more) fits before the next key (at most ``MAX_WAIT_S``)."""
        cost = max(cost, self.work_cost)
        start = self.clock()
        while (wait := self.wait_s(cost)) > 0 and self.clock() - start < MAX_WAIT_S:
            await asyncio.sleep(wait)
        if self._work_from is None:
            self._work_from = self.clock()
