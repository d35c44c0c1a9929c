"""Following what other processes store, whatever the backend: on PostgreSQL a listener
(pg_listen: LISTEN/NOTIFY on a connection of its own); a SQLite store has one machine and nothing to
follow. The app asks here, never which backend it has."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_agent.core.store.pg_listen import Change, Listener


def origin() -> str | None:
    """What this process's own writes carry (its changes are skipped), or None when the store has
    nothing to follow (SQLite)."""
    from tui_agent.core.store import backends

    return backends.current().origin()


def listen(on_change: Callable[[Change], None], *, alive: Callable[[], bool]) -> Listener | None:
    """Start following (only when :func:`origin` is not None): ``on_change`` runs on the listener's thread."""
    from tui_agent.core.store import backends

    return backends.current().listen(on_change, alive=alive)
