"""The last write of an app that is being ended (its terminal gone, a SIGTERM): a reply still
being written is stored as cancelled, on a connection of its own that gives up quickly, whatever
the backend (ui/lifeline.py decides when; this knows how)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_agent.core.store.location import StoreURL

CANCEL_SQL = "UPDATE messages SET status = 'cancelled' WHERE status = 'streaming'"


def cancel_streaming(store: StoreURL | Path) -> int:
    """A reply still being written is stored as cancelled (the loop does this when it can run), on
    a connection of its own: in the SQLite file, or the PostgreSQL database of a ``postgresql://``
    store URL."""
    conn = connect_quickly(store)
    try:
        return cancel_on(conn)
    finally:
        conn.close()


def connect_quickly(store: StoreURL | Path) -> Any:
    """A DB-API connection that gives up quickly, made by the store's backend (no store need be open)."""
    from tui_agent.core.store import backends
    from tui_agent.core.store.backends.sqlite import url_of

    url = url_of(store) if isinstance(store, Path) else store
    return backends.backend_for(url).connect_quickly(url)


def cancel_on(conn: Any) -> int:
    cursor = conn.cursor()
    cursor.execute(CANCEL_SQL)
    count = int(cursor.rowcount)
    conn.commit()
    return count


def bound_store() -> StoreURL:
    """The URL of the store the app's models use."""
    from tui_agent.core.store import backends

    return backends.current().url
