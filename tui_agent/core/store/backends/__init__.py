"""The store as one value (see base.py): ``open`` picks the backend from the URL, once;
``current`` is the store the models are bound to; ``of`` the store behind any peewee database."""

from __future__ import annotations

from typing import TYPE_CHECKING

import peewee as pw

from tui_agent.core.store.backends.base import MemoryRunner, SearchReader, Store, WriteBlocked
from tui_agent.core.store.errors import StoreError

if TYPE_CHECKING:
    from tui_agent.core.store.location import StoreURL

__all__ = ["MemoryRunner", "SearchReader", "Store", "WriteBlocked", "backend_for", "current", "of", "open"]


def backend_for(url: StoreURL) -> type[Store]:
    """The implementation that opens ``url`` (its ``name``, what it needs), without opening it.
    Only that one is imported: a SQLite user's start-up never loads the PostgreSQL backend."""
    if url.kind == "postgresql":
        from tui_agent.core.store.backends.postgres import PostgresStore

        return PostgresStore
    if url.kind == "sqlite":
        from tui_agent.core.store.backends.sqlite import SqliteStore

        return SqliteStore
    raise KeyError(url.kind)


def open(url: StoreURL, *, target_version: int | None = None) -> Store:  # backends.open(url)
    """Open the store ``url`` names (see store/location.py), migrate it and bind the models to it."""
    return backend_for(url).open(url, target_version=target_version)


def of(database: pw.Database) -> Store:
    """The store behind ``database``: the one ``open`` made, else one made for it now (a database
    opened by sqlite_file.py or store/pg.py directly: a copy's source, a test)."""
    store = getattr(database, "store", None)
    if isinstance(store, Store):
        return store
    store = _made_for(database)
    database.store = store  # type: ignore[attr-defined]
    return store


def _made_for(database: pw.Database) -> Store:
    if isinstance(database, pw.PostgresqlDatabase):
        from tui_agent.core.store.backends import postgres

        return postgres.store_of(database)
    elif isinstance(database, pw.SqliteDatabase):
        from tui_agent.core.store.backends import sqlite

        return sqlite.store_of(database)
    raise StoreError(f"not a tui-agent store: {type(database).__name__}")


def current() -> Store:
    """The store the models are bound to (raises StoreError when none is open)."""
    from tui_agent.core.store.models import Message

    database = Message._meta.database
    if database is None:
        raise StoreError("no store is open")
    return of(database)
