"""Opening the store a URL names: ``open_store``. The SQLite file's own opener is the SQLite
backend's (store/backends/sqlite_file.py), named here too for the callers that open a file."""

from __future__ import annotations

import peewee as pw

from tui_agent.core.store.backends.sqlite_file import (
    BUSY_TIMEOUT_S,
    PRAGMAS,
    _check_schema,
    check_file,
    open_database,
)
from tui_agent.core.store.location import StoreURL

__all__ = ["BUSY_TIMEOUT_S", "PRAGMAS", "_check_schema", "check_file", "open_database", "open_store"]


def open_store(url: StoreURL) -> pw.Database:
    """Open the store a URL names (see store/location.py): a SQLite file or a PostgreSQL database;
    its peewee database (``backends.of(database)``, or ``backends.current()``: the store)."""
    from tui_agent.core.store import backends

    return backends.open(url).database
