"""The last write of an app that is being ended (its terminal gone, a SIGTERM): a reply still
being written is stored as cancelled, on a connection of its own that gives up quickly, whatever
the backend (ui/lifeline.py decides when; this knows how)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tui_agent.core.store.location import StoreURL

PG_TIMEOUT_MS = 500  # statement and lock timeout of that last PostgreSQL connection
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
    """A DB-API connection that gives up quickly: SQLite's, or psycopg's with short timeouts."""
    if not isinstance(store, Path):
        if not store.is_postgresql:
            assert store.path is not None
            return sqlite3.connect(store.path, timeout=0.5)
        import psycopg

        args = store.connect_args()
        limits = f"-c statement_timeout={PG_TIMEOUT_MS} -c lock_timeout={PG_TIMEOUT_MS}"
        args["options"] = f"{args['options']} {limits}" if args.get("options") else limits
        args.setdefault("connect_timeout", 2)  # libpq's shortest; the forced end waits less (CANCEL_WAIT_S)
        return psycopg.connect(dbname=store.dbname, application_name="tui-agent lifeline", **args)
    return sqlite3.connect(store, timeout=0.5)


def cancel_on(conn: Any) -> int:
    cursor = conn.cursor()
    cursor.execute(CANCEL_SQL)
    count = int(cursor.rowcount)
    conn.commit()
    return count


def bound_store() -> StoreURL | Path:
    """The store the app's models use: its URL (PostgreSQL) or its SQLite file."""
    from tui_agent.core.store.models import Message

    database = Message._meta.database
    url: StoreURL | None = getattr(database, "store_url", None)
    return url if url is not None else Path(database.database)
