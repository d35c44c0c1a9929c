"""The last write of an app that is being ended (its terminal gone, a SIGTERM): a reply still
being written is stored as cancelled, on a connection of its own that gives up quickly, whatever
the backend (ui/lifeline.py decides when; this knows how)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tui_agent.core.store.location import StoreURL

log = logging.getLogger("tui_agent.store")


def _url(store: StoreURL | Path) -> StoreURL:
    from tui_agent.core.store.backends.sqlite import url_of

    return url_of(store) if isinstance(store, Path) else store


def quick_param(store: StoreURL | Path) -> str:
    """The placeholder of SQL on a ``connect_quickly`` connection to ``store``."""
    from tui_agent.core.store import backends

    return backends.backend_for(_url(store)).QUICK_PARAM


def connect_quickly(store: StoreURL | Path) -> Any:
    """A DB-API connection that gives up quickly, made by the store's backend (no store need be open)."""
    from tui_agent.core.store import backends

    url = _url(store)
    return backends.backend_for(url).connect_quickly(url)


def cancel_on(conn: Any, param: str, words: Sequence[tuple[int, str, str | None]] = ()) -> int:
    """This app's replies still "streaming" become "cancelled": ``words`` holds each one as
    ``(row id, text, reasoning)``, what the app had of it (core/streaming_rows), stored with it; one
    the server refuses (a NUL in PostgreSQL text) keeps what its last flush stored. Only these rows:
    a reply another process streams (another machine on the same PostgreSQL database, another app
    on the same SQLite file) is its own and stays as it is. ``param``: the connection's placeholder
    (``quick_param``). The number of rows cancelled."""
    cursor = conn.cursor()
    count = 0
    for row_id, text, reasoning in words:
        try:  # each on its own: one the server refuses takes no other with it
            cursor.execute(
                f"UPDATE messages SET content = {param}, reasoning = {param}, status = 'cancelled'"
                f" WHERE id = {param} AND status = 'streaming'",
                (text, reasoning, row_id),
            )
            conn.commit()
        except Exception:
            conn.rollback()
            log.warning("reply %s: its words so far could not be stored (its last flush stands)", row_id)
            try:
                cursor.execute(
                    f"UPDATE messages SET status = 'cancelled' WHERE id = {param} AND status = 'streaming'", (row_id,)
                )
                conn.commit()
            except Exception:
                conn.rollback()
                log.warning("reply %s: it could not be marked cancelled", row_id)
                continue
        count += max(0, int(cursor.rowcount))
    return count


def bound_store() -> StoreURL:
    """The URL of the store the app's models use."""
    from tui_agent.core.store import backends

    return backends.current().url
