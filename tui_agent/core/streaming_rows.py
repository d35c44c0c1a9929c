"""The replies being streamed into the store now, readable from any thread: when an app is ended
by force (ui/lifeline.py: its terminal gone, a SIGTERM, and the event loop too busy or stuck to
end the normal way), the last write stores each one as cancelled *with its words so far*, not only
those of its last flush (up to half a second older).

Kept apart from ``core.reply`` (which fills it) so that the forced end imports nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable

#: The row id of each reply being streamed -> what gives its text and reasoning now.
_LIVE: dict[int, Callable[[], tuple[str, str | None]]] = {}
_lock = threading.Lock()


def streaming(row_id: int, now: Callable[[], tuple[str, str | None]]) -> None:
    with _lock:
        _LIVE[row_id] = now


def ended(row_id: int) -> None:
    with _lock:
        _LIVE.pop(row_id, None)


def words_so_far() -> list[tuple[int, str, str | None]]:
    """``(row id, text, reasoning)`` of each reply being streamed, as they stand now."""
    with _lock:
        live = list(_LIVE.items())
    found = []
    for row_id, now in live:
        try:
            text, reasoning = now()
        except Exception:  # read from another thread while the reply changes: its last flush stands
            continue
        found.append((row_id, text, reasoning))
    return found
