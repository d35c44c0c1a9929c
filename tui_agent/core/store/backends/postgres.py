"""The PostgreSQL store: one database several machines share (store/pg.py opens it,
store/pg_migrations.py its schema, store/search_pg.py its search, store/pg_listen.py follows the
other machines' writes, store/pg_memory.py + core/tools/pg_guard.py + pg_run.py are memory_sql's
runner). psycopg is imported only here and in those files, and only once such a store is opened."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import peewee as pw

from tui_agent.core.store.backends.base import (
    MemoryRunner,
    Q,
    SearchReader,
    Store,
    WriteBlocked,
    check_source_version,
)
from tui_agent.core.store.errors import DATABASE_ERRORS, StoreError, describe
from tui_agent.core.store.location import StoreURL

if TYPE_CHECKING:
    from tui_agent.core.store.pg_listen import Change, Listener
    from tui_agent.core.store.search import Page
    from tui_agent.core.tools.sql_run import Request

QUICK_TIMEOUT_MS = 500  # statement and lock timeout of the last write of an app being ended


class PostgresStore(Store):
    name = "PostgreSQL"
    shared = True
    memory_needs_setup = True
    keeps_pictures = True

    @classmethod
    def open(cls, url: StoreURL, *, target_version: int | None = None) -> PostgresStore:
        from tui_agent.core.store import pg, pg_migrations

        latest = pg_migrations.LATEST if target_version is None else target_version
        database = pg.open_postgres(url, target_version=latest)
        store = cls(database, url)
        database.store = store  # type: ignore[attr-defined]
        return store

    @classmethod
    def open_read_only(cls, url: StoreURL) -> PostgresStore:
        from tui_agent.core.store import pg_migrations
        from tui_agent.core.store.pg import connect_database

        database = connect_database(url)
        try:
            database.connect()
            version = pg_migrations.current_version(database.connection())
            check_source_version(version, pg_migrations.LATEST, url.where(), database)
            database.execute_sql("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        except DATABASE_ERRORS:
            database.close()
            raise
        store = cls(database, url)
        database.store = store  # type: ignore[attr-defined]
        return store

    def migrate(self, target_version: int | None = None) -> None:
        from tui_agent.core.store import pg_migrations

        latest = pg_migrations.LATEST if target_version is None else target_version
        pg_migrations.migrate(self.database.connection(), latest)

    def identity(self) -> str:
        return f"postgresql://{self.url.host or 'localhost'}:{self.url.port or 5432}/{self.url.dbname}"

    def for_update(self, query: Q) -> Q:
        return query.for_update()  # type: ignore[attr-defined]

    def serialize(self, key: int) -> None:
        self.database.execute_sql("SELECT pg_advisory_xact_lock(%s)", (key,))

    def named(self, name: str) -> str:
        return f"%({name})s"

    def row_lock(self, table: str, key: str) -> list[str]:
        # One writer of the row at a time (two machines appending to one conversation would each
        # read the leaf the other one left).
        return [f"SELECT id FROM {table} WHERE id = {{{key}}} FOR UPDATE"]

    def last_id(self, table: str) -> str:
        return f"currval(pg_get_serial_sequence('{table}', 'id'))"

    def together(self, statements: Sequence[tuple[str, Any]], atomic: bool, *, repeatable: bool = False) -> list[Any]:
        from tui_agent.core.store import pg_together

        return pg_together.in_one_query(self.database, statements, atomic, repeatable=repeatable)

    @contextmanager
    def lock_wait(self, milliseconds: int) -> Iterator[None]:
        try:
            with self.database.atomic():
                self.database.execute_sql(f"SET LOCAL lock_timeout = '{int(milliseconds)}ms'")
                yield
        except Exception as exc:
            if _lock_timeout(exc):
                raise WriteBlocked(str(exc).splitlines()[0] if str(exc) else "lock timeout") from None
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        self.database.execute_sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            self.database.execute_sql("ROLLBACK")

    def search(self, query: str, *, before: int | None, limit: int) -> Page:
        from tui_agent.core.store import search_pg

        return search_pg.search_page(self.database.connection(), query, before=before, limit=limit)

    def search_reader(self) -> SearchReader:
        return PostgresSearchReader(self.url)

    def memory_runner(self) -> MemoryRunner:
        def prepare(request: Request) -> str:
            problem = self.prepare_memory()
            if problem:
                return problem
            try:
                connect = {"dbname": self.url.dbname, **self.url.connect_args()}
            except StoreError as exc:
                return str(exc)
            request.postgres = {"connect": connect, "where": self.where()}
            return ""

        return MemoryRunner(
            dialect="PostgreSQL",
            module="tui_agent.core.tools.pg_run",
            preload=("pglast.parser", "psycopg"),  # loaded before the deadline starts: the server times the statement
            prepare=prepare,
        )

    def prepare_memory(self) -> str:
        """memory_sql's role and views (pg_memory), made now if this user may."""
        import psycopg

        from tui_agent.core.store import pg_memory

        failures: tuple[type[BaseException], ...] = (psycopg.Error, *DATABASE_ERRORS)
        try:
            conn = self.database.connection()
            missing = pg_memory.state(conn)
            if not missing:
                return ""
            try:
                pg_memory.apply(conn)
            except failures as exc:
                first = (str(exc).splitlines() or [type(exc).__name__])[0]
                return pg_memory.missing_message(f"{missing}; {first}", str(conn.info.user))
            still = pg_memory.state(conn)
            return pg_memory.missing_message(still, str(conn.info.user)) if still else ""
        except failures as exc:
            return str(describe(exc))

    def set_up_memory(self, members: list[str]) -> str:
        import psycopg

        from tui_agent.core.store import pg_memory

        user = self.url.user or "?"
        try:
            conn = self.database.connection()
            user = str(conn.info.user)
            pg_memory.apply(conn, members or None)
        except psycopg.Error as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise StoreError(
                f"PostgreSQL user {user} could not set up memory_sql in {self.where()} ({first}): run it as the "
                "tables' owner with the right to create roles, or give a DBA the SQL of `tui-agent db setup --print`"
            ) from None
        shown = ", ".join(members or [user])
        return (
            f"memory_sql is set up in {self.where()}: it runs as the role {pg_memory.ROLE} "
            f"(member: {shown}), reading only the views of the schema {pg_memory.SCHEMA}"
        )

    def origin(self) -> str | None:
        from tui_agent.core.store.pg import application_name

        return application_name()

    def listen(self, on_change: Callable[[Change], None], *, alive: Callable[[], bool]) -> Listener | None:
        from tui_agent.core.store.pg import application_name
        from tui_agent.core.store.pg_listen import Listener

        return Listener(self.url, on_change, alive=alive, application_name=application_name() + " listen").start()

    QUICK_PARAM = "%s"  # psycopg's

    @classmethod
    def connect_quickly(cls, url: StoreURL) -> Any:
        import psycopg

        args = url.connect_args()
        limits = f"-c statement_timeout={QUICK_TIMEOUT_MS} -c lock_timeout={QUICK_TIMEOUT_MS}"
        args["options"] = f"{args['options']} {limits}" if args.get("options") else limits
        args.setdefault("connect_timeout", 2)  # libpq's shortest; the forced end waits less (CANCEL_WAIT_S)
        return psycopg.connect(dbname=url.dbname, application_name="tui-agent lifeline", **args)

    def columns(self, table: str) -> dict[str, str] | None:
        sql = (
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position"
        )
        found = self.execute(sql, (table,)).fetchall()
        return {str(name): str(declared or "") for name, declared in found} or None

    def after_copy(self, table: str, key: str) -> None:
        """Move the table's id sequence past the highest id, so that rows made after the copy do
        not take an id the copy used."""
        sequence = self.execute("SELECT pg_get_serial_sequence(%s, %s)", (table, key)).fetchone()[0]
        if not sequence:
            return
        highest = self.execute(f"SELECT max({_quoted(key)}) FROM {_quoted(table)}").fetchone()[0]
        last, called = self.execute(f"SELECT last_value, is_called FROM {sequence}").fetchone()
        next_free = last + 1 if called else last
        if highest is not None and highest >= next_free:
            self.execute("SELECT setval(%s, %s)", (sequence, highest))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lock_timeout(exc: BaseException | None) -> bool:
    while exc is not None:
        if type(exc).__name__ == "LockNotAvailable" or "lock timeout" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class PostgresSearchReader(SearchReader):
    """A read-only psycopg connection of its own; a search is cancelled by a cancel request sent
    to the server for its statement (and by its stop flag between the index's windows)."""

    def __init__(self, url: StoreURL) -> None:
        self.url = url
        self._conn: Any = None
        self._lock = threading.Lock()
        self._running: Callable[[], bool] | None = None  # the stop flag of the search running

    def page(self, query: str, before: int | None, stop: Callable[[], bool]) -> Page:
        import psycopg

        from tui_agent.core.store import search_pg
        from tui_agent.core.store.search import SearchCancelled

        with self._lock:
            self._running = stop
        try:
            conn = self._connection()
            try:
                return search_pg.search_page(conn, query, before=before, cancelled=stop)
            except SearchCancelled:
                if stop():
                    raise
            # Cancelled by a request meant for the search before (it arrived late): search again.
            return search_pg.search_page(conn, query, before=before, cancelled=stop)
        except psycopg.Error as exc:  # the server went away (the next search connects again)...
            self.close()
            raise describe(exc, self.url.where()) from None
        finally:
            with self._lock:
                self._running = None

    def cancel(self, stop: Callable[[], bool]) -> None:
        """The lock keeps the next search from starting while the request is sent."""
        with self._lock:
            if self._running is stop and self._conn is not None:
                with contextlib.suppress(Exception):  # the search ends anyway, at its next window
                    self._conn.cancel_safe(timeout=2)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> Any:
        if self._conn is None:
            from tui_agent.core.store import search_pg

            self._conn = search_pg.connect(self.url)
        return self._conn


def store_of(database: pw.Database) -> PostgresStore:
    """The store of a PostgreSQL database opened without ``open`` (``pg.connect_database``)."""
    return PostgresStore(database, database.store_url)  # type: ignore[attr-defined]
