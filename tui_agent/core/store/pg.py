"""Opening a PostgreSQL store: connect, check the schema version, migrate, bind the models.

psycopg 3 is imported only here (and only when a postgresql:// URL is used): SQLite users never
load it. Peewee's PostgresqlDatabase keeps one connection per thread, as SqliteDatabase does.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from typing import Any

import peewee as pw

from tui_agent.core.store import pg_migrations
from tui_agent.core.store.driver import load_psycopg
from tui_agent.core.store.errors import DATABASE_ERRORS, NOT_CHANGED, StoreError, describe
from tui_agent.core.store.location import StoreURL
from tui_agent.core.store.models import MODELS

log = logging.getLogger("tui_agent.store")
INSTALL = "pip install 'tui-agent[postgresql]'"
CONNECT_TIMEOUT_S = 5


def driver_missing() -> str | None:
    """Why PostgreSQL cannot be used from this install (None: it can)."""
    try:
        load_psycopg()
    except ImportError:
        return f"a postgresql:// store needs the psycopg package: {INSTALL}"
    return None


_ORIGIN: list[str] = []


def application_name() -> str:
    """This process's name on the server: the notifications of what it wrote carry it (the
    ``origin`` of pg_migrations P5), so that an app skips its own writes."""
    if not _ORIGIN:
        _ORIGIN.append(f"tui-agent {os.getpid()} {secrets.token_hex(4)}")
    return _ORIGIN[0]


class ReconnectingDatabase(pw.PostgresqlDatabase):
    """A connection the server dropped (restarted, network gone) is let go of and made again on
    the next use outside a transaction: the query that found it dead failed, the next one works as
    soon as the server is back (psycopg marks it closed; peewee alone would keep it forever)."""

    def _drop_if_dead(self) -> None:
        if self.is_closed() or self.in_transaction() or self.is_connection_usable():
            return
        try:
            self.close()  # peewee forgets this thread's connection even when closing it fails
        except Exception:  # already gone: nothing to close
            pass

    def cursor(self, named_cursor: Any = None) -> Any:
        self._drop_if_dead()
        return super().cursor(named_cursor)

    def connection(self) -> Any:
        self._drop_if_dead()
        return super().connection()

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        """A read outside a transaction whose connection the server had ended (a restart,
        ``pg_terminate_backend``, a failover: found only when used) goes again, once, on a new
        connection; a write is never sent twice (it may have been done). Once another machine
        upgraded the schema past this code's, writes are refused (``schema_guard``)."""
        from tui_agent.core.store import schema_guard

        if (reason := schema_guard.refusal()) is not None and not is_read(sql) and not is_neutral(sql):
            raise StoreError(reason)
        try:
            return super().execute_sql(sql, params)
        except (pw.OperationalError, pw.InterfaceError) as exc:
            if self.in_transaction() or not is_read(sql) or self.is_closed() or self.is_connection_usable():
                raise
            log.info("the server ended the connection (%s): the read goes again on a new one", exc)
            self._drop_if_dead()
            return super().execute_sql(sql, params)


WRITES = re.compile(r"\b(insert|update|delete|merge|create|drop|alter|truncate|lock|notify|set|call|do|copy)\b", re.I)


def is_read(sql: str) -> bool:
    """A statement that only reads: a SELECT (or WITH ... SELECT) naming no writing command."""
    head = sql.lstrip().split(None, 1)[0].lower() if sql.strip() else ""
    return head in ("select", "with") and not WRITES.search(sql) and "for update" not in sql.lower()


def is_neutral(sql: str) -> bool:
    """A statement that neither reads nor writes rows: the bounds of a transaction."""
    head = sql.lstrip().split(None, 1)[0].lower() if sql.strip() else ""
    return head in ("begin", "commit", "rollback", "savepoint", "release", "show")


def connect_database(url: StoreURL) -> pw.PostgresqlDatabase:
    """An unconnected peewee database for ``url`` (psycopg 3, libpq's defaults for the rest)."""
    missing = driver_missing()
    if missing:
        raise StoreError(missing)
    db = ReconnectingDatabase(
        url.dbname,
        autoconnect=True,
        prefer_psycopg3=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        application_name=application_name(),
        # No statement prepared on the server: through PgBouncer in transaction mode, clients share
        # server connections, and psycopg's names (_pg3_0...) of two clients met there ("already
        # exists": tests/store/test_pgbouncer.py); outside a pipeline, preparing also cost a round
        # trip of its own on a statement's fifth run.
        prepare_threshold=None,
        **url.connect_args(),
    )
    db.store_url = url  # type: ignore[attr-defined]  # for backends.of (a database opened without a store)
    return db


def open_postgres(url: StoreURL, *, target_version: int = pg_migrations.LATEST) -> pw.PostgresqlDatabase:
    """Connect, refuse a schema this tui-agent does not know (nothing written), migrate, bind."""
    db = connect_database(url)
    try:
        db.connect(reuse_if_open=True)
        conn = db.connection()
        version = check_schema(conn, url)
        pg_migrations.migrate(conn, target_version, version=version)  # (not read twice: a round trip each)
    except StoreError:
        db.close()
        raise
    except DATABASE_ERRORS as exc:
        db.close()
        raise describe(exc, url.where()) from None
    db.bind(MODELS, bind_refs=False, bind_backrefs=False)
    return db


def check_schema(conn: object, url: StoreURL) -> int:
    """The schema version, once it is one this tui-agent can use (else StoreError)."""
    version = pg_migrations.current_version(conn)
    if version > pg_migrations.LATEST:
        raise StoreError(
            f"the PostgreSQL database {url.where()} was set up by a newer tui-agent: its schema version "
            f"{version} is newer than this tui-agent ({pg_migrations.LATEST}): upgrade tui-agent "
            f"(pip install -U tui-agent) on this machine; {NOT_CHANGED}"
        )
    if version == 0 and pg_migrations.foreign_tables(conn):
        # Another machine may be setting the database up right now: its tables and its version
        # appear together, but read apart (two statements) the tables can come after the version.
        # Wait for any migration in progress (their lock) and read both again, in one go.
        with conn.transaction(), conn.cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (pg_migrations.LOCK_KEY,))
            version = pg_migrations.current_version(conn)
            foreign = pg_migrations.foreign_tables(conn) if version == 0 else 0
        if foreign:
            raise StoreError(
                f"the PostgreSQL database {url.where()} holds another program's tables and no tui-agent schema: "
                f"create a database for tui-agent (createdb tui_agent) and use that; {NOT_CHANGED}"
            )
    return version
