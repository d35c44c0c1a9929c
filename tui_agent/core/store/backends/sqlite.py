"""The SQLite store: one file in the vault (sqlite_file.py opens it, store/migrations.py its schema,
store/search.py its FTS5 search, core/tools/sql_run.py + sql_guard.py memory_sql's runner). One
machine writes it: there are no other writers to follow, nothing to count, and every transaction
takes the write lock when it begins (BEGIN IMMEDIATE), which serializes writers by itself."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import peewee as pw

from tui_agent.core.store.backends.base import MemoryRunner, Q, SearchReader, Store, check_source_version
from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.location import StoreURL

if TYPE_CHECKING:
    from tui_agent.core.store.pg_listen import Change, Listener
    from tui_agent.core.store.search import Page
    from tui_agent.core.tools.sql_run import Request

QUICK_TIMEOUT_S = 0.5  # the last write of an app being ended waits no longer for the lock


def url_of(path: Path | str) -> StoreURL:
    path = Path(path)
    return StoreURL("sqlite", f"sqlite://{path}", path=path)


class SqliteStore(Store):
    name = "SQLite"
    shared = False

    @property
    def path(self) -> Path:
        assert self.url.path is not None
        return self.url.path

    @classmethod
    def open(cls, url: StoreURL, *, target_version: int | None = None) -> SqliteStore:
        from tui_agent.core.store import migrations
        from tui_agent.core.store.backends import sqlite_file

        assert url.path is not None
        latest = migrations.LATEST if target_version is None else target_version
        database = sqlite_file.open_database(url.path, target_version=latest)
        store = cls(database, url)
        database.store = store  # type: ignore[attr-defined]
        return store

    @classmethod
    def open_read_only(cls, url: StoreURL) -> SqliteStore:
        from tui_agent.core.store import migrations
        from tui_agent.core.store.backends.sqlite_file import check_file

        path = url.path
        assert path is not None
        if not path.is_file():
            what = "a folder" if path.is_dir() else "no such file"
            raise StoreError(f"the source {path} is not a tui-agent store ({what})")
        check_file(path)
        database = pw.SqliteDatabase(f"file:{quote(str(path))}?mode=ro", uri=True, pragmas={"query_only": 1})
        database.connect()
        version, count = database.execute_sql(
            "SELECT (SELECT user_version FROM pragma_user_version),"
            " (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')"
        ).fetchone()
        if version == 0 and count:
            database.close()
            raise StoreError(f"the source {path} is a SQLite database of another program, not a tui-agent store")
        check_source_version(int(version), migrations.LATEST, str(path), database)
        store = cls(database, url)
        database.store = store  # type: ignore[attr-defined]
        return store

    def migrate(self, target_version: int | None = None) -> None:
        from tui_agent.core.store import migrations

        migrations.migrate(self.database.connection(), migrations.LATEST if target_version is None else target_version)

    def identity(self) -> str:
        return f"sqlite://{self.path.expanduser().resolve()}"

    def for_update(self, query: Q) -> Q:
        return query  # BEGIN IMMEDIATE: the transaction holds the write lock from its start

    def serialize(self, key: int) -> None:
        pass  # every transaction takes the write lock when it begins

    def named(self, name: str) -> str:
        return f":{name}"

    def row_lock(self, table: str, key: str) -> list[str]:
        return []  # BEGIN IMMEDIATE: the transaction holds the write lock from its start

    def last_id(self, table: str) -> str:
        return "last_insert_rowid()"

    def together(self, statements: Sequence[tuple[str, Any]], atomic: bool, *, repeatable: bool = False) -> list[Any]:
        from tui_agent.core.store import results

        if not atomic:
            return [results.result_of(self.execute(sql, params)) for sql, params in statements]
        with self.database.atomic():
            return [results.result_of(self.execute(sql, params)) for sql, params in statements]

    @contextmanager
    def lock_wait(self, milliseconds: int) -> Iterator[None]:
        with self.database.atomic():  # the write lock is taken (or waited for) at BEGIN
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        self.database.execute_sql("BEGIN")  # deferred: a read transaction, no write lock
        try:
            yield
        finally:
            self.database.execute_sql("ROLLBACK")

    def search(self, query: str, *, before: int | None, limit: int) -> Page:
        from tui_agent.core.store import search

        return search.search_page(self.database.connection(), query, before=before, limit=limit)

    def search_reader(self) -> SearchReader:
        return SqliteSearchReader(str(self.path))

    def memory_runner(self) -> MemoryRunner:
        def prepare(request: Request) -> str:
            request.db_path = str(self.path)
            return ""

        return MemoryRunner(dialect="SQLite", module="tui_agent.core.tools.sql_run", prepare=prepare)

    def origin(self) -> str | None:
        return None

    def listen(self, on_change: Callable[[Change], None], *, alive: Callable[[], bool]) -> Listener | None:
        return None

    QUICK_PARAM = "?"  # sqlite3's

    @classmethod
    def connect_quickly(cls, url: StoreURL) -> Any:
        assert url.path is not None
        return sqlite3.connect(url.path, timeout=QUICK_TIMEOUT_S)

    def after_copy(self, table: str, key: str) -> None:
        pass  # SQLite numbers new rows from the highest id by itself

    def columns(self, table: str) -> dict[str, str] | None:
        found = self.execute(f"SELECT name, type FROM pragma_table_info({self.param})", (table,)).fetchall()
        return {str(name): str(declared or "") for name, declared in found} or None


class SqliteSearchReader(SearchReader):
    """A read-only connection of its own; a search stops at SQLite's progress handler once told to."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def page(self, query: str, before: int | None, stop: Callable[[], bool]) -> Page:
        from tui_agent.core.store import search

        conn = self._connection()
        conn.set_progress_handler(lambda: 1 if stop() else 0, 1000)
        try:
            return search.search_page(conn, query, before=before, cancelled=stop)
        finally:
            conn.set_progress_handler(None, 0)

    def cancel(self, stop: Callable[[], bool]) -> None:
        pass  # the progress handler reads the search's stop flag: not interrupt(), which could land on the next one

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> sqlite3.Connection:
        with self._lock:
            if self._conn is None:
                conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
                conn.execute("PRAGMA query_only = 1")
                self._conn = conn
            return self._conn


def store_of(database: pw.Database) -> SqliteStore:
    """The store of a SQLite database opened without ``open`` (a copy's source, a test)."""
    return SqliteStore(database, url_of(database.database))
