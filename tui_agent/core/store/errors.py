"""Failures of the store as one-line messages: which file, what happened, what to do.

``StoreError`` is what entry points catch; ``describe`` turns a driver error into one.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import peewee as pw

#: Errors from the database driver, raw or wrapped by peewee (both trees are caught: peewee wraps
#: only what passes through its own cursor).
DATABASE_ERRORS: tuple[type[BaseException], ...] = (pw.DatabaseError, sqlite3.DatabaseError)

NOT_CHANGED = "tui-agent did not change it"
LOW_SPACE_BYTES = 1024 * 1024


class StoreError(RuntimeError):
    """The vault's database cannot be used; ``str()`` is the message for the user."""

    def __init__(self, message: str, *, disk_full: bool = False) -> None:
        super().__init__(message)
        self.disk_full = disk_full


#: What a store call may raise: the driver's errors, and StoreError (made of them, or of a
#: refusal before any statement).
STORE_FAILURES: tuple[type[BaseException], ...] = (StoreError, *DATABASE_ERRORS)


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    text = str(exc).lower()
    return "disk is full" in text or "no space left" in text


def describe(exc: BaseException, path: Path | str | None = None) -> StoreError:
    """A StoreError for ``exc`` raised while using the database at ``path`` (default: the bound one)."""
    if isinstance(exc, StoreError):
        return exc
    while "no transaction is active" in str(exc) and exc.__context__ is not None:
        # SQLite rolled back by itself (disk full does that); peewee's own ROLLBACK then failed.
        exc = exc.__context__
    where = str(path) if path is not None else bound_path()
    text = str(exc).strip() or exc.__class__.__name__
    lower = text.lower()
    if is_disk_full(exc) or (("i/o error" in lower or "unable to open" in lower) and _no_space(where)):
        return StoreError(
            f"the disk holding {where} is full ({text}): free some space and try again; "
            "what was saved before stays saved",
            disk_full=True,
        )
    if "not a database" in lower or "file is encrypted" in lower:
        return StoreError(
            f"{where} is not a tui-agent database (SQLite says: {text}): move it aside or restore it "
            f"from a backup, then run again (a new one is made where none exists); {NOT_CHANGED}"
        )
    if "malformed" in lower or "corrupt" in lower:
        return StoreError(
            f"{where} is damaged (SQLite says: {text}): restore it from a backup, or salvage it with "
            f"`sqlite3 {where} .recover | sqlite3 recovered.db` and put recovered.db in its place"
        )
    postgres = _postgres_message(where, text, lower)
    if postgres is not None:
        return postgres
    if "locked" in lower or "busy" in lower:
        return StoreError(
            f"{where} stayed locked by another program for too long ({text}): close the other "
            "program or wait, then try again"
        )
    if "readonly" in lower or "read-only" in lower or "unable to open" in lower or "i/o error" in lower:
        return StoreError(
            f"cannot use {where} ({text}): check that the folder exists, is writable and its disk "
            "has space, then try again"
        )
    return StoreError(f"database error in {where}: {text}")


def _postgres_message(where: str, text: str, lower: str) -> StoreError | None:
    """PostgreSQL's failures to reach or use the server, in one line with what to do."""
    first = text.splitlines()[0] if text else text
    if "password authentication failed" in lower or "no password supplied" in lower:
        return StoreError(
            f"PostgreSQL at {where} refused the login ({first}): put the password in $PGPASSWORD or "
            "~/.pgpass, or write ${VARIABLE} in the URL's password place"
        )
    if "does not exist" in lower and "database" in lower and "connection" in lower:
        return StoreError(f"PostgreSQL at {where}: {first}: create it (createdb NAME) or fix the URL")
    if any(phrase in lower for phrase in UNREACHABLE):
        return StoreError(
            f"cannot reach PostgreSQL at {where} ({first}): check that the server runs and that the URL "
            "(--db, $TUI_AGENT_DB or `tui-agent db show`) is right; what was saved before stays saved"
        )
    return None


UNREACHABLE = (
    "connection refused",
    "could not connect",
    "connection failed",
    "timeout expired",
    "server closed the connection",
    "terminating connection",
    "connection is lost",
    "connection already closed",
    "the connection is closed",
    "consuming input failed",
    "cannot reach postgresql",
    # PgBouncer, up while the server behind it is not (its own words, PgBouncer 1.18): a query that
    # waited for a server connection, a server connection lost under a query, a login refused for a
    # while after the server's had failed (tests/store/test_pgbouncer.py).
    "query_wait_timeout",
    "server conn crashed",
    "server login has been failing",
)


def is_unreachable(exc: BaseException) -> bool:
    """The store's server is away (stopped, restarting, the network gone): a pause, not a fault of the data."""
    return any(phrase in str(exc).lower() for phrase in UNREACHABLE)


def bound_path() -> str:
    """The file the models are bound to (for messages raised away from ``open_database``)."""
    from tui_agent.core.store.models import Message

    database = Message._meta.database
    store = getattr(database, "store", None)  # the store's own value (store/backends), once asked for
    if store is not None:
        return str(store.where())
    name = getattr(database, "database", None) if database is not None else None
    return str(name) if name else "the vault database (agent.db)"


def _no_space(where: str) -> bool:
    """SQLite reports a full disk as an I/O error when it cannot create its -wal/-shm files."""
    try:
        stats = os.statvfs(os.path.dirname(where) or ".")
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < LOW_SPACE_BYTES


def store_failure_message(exc: BaseException) -> str | None:
    """The one-line message for a failure of the vault's store (or its disk), None for anything else."""
    if isinstance(exc, (StoreError, *DATABASE_ERRORS)):
        return str(describe(exc))
    if isinstance(exc, OSError) and is_disk_full(exc):
        where = f" writing {exc.filename}" if exc.filename else ""
        return f"the disk is full{where} ({exc.strerror or exc}): free some space and try again"
    return None
