"""Opening the SQLite file (the SQLite backend's opener): checks, WAL, busy timeout, migrations, model binding."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import peewee as pw

from tui_agent.core.store import migrations
from tui_agent.core.store.errors import DATABASE_ERRORS, NOT_CHANGED, StoreError, describe
from tui_agent.core.store.models import MODELS
from tui_agent.core.store.recovery import make_reserve

BUSY_TIMEOUT_S = 10
PRAGMAS = {
    "synchronous": "normal",
    "foreign_keys": 1,
    "busy_timeout": BUSY_TIMEOUT_S * 1000,
}
SQLITE_MAGIC = b"SQLite format 3\x00"


def open_database(path: Path, *, target_version: int = migrations.LATEST) -> pw.SqliteDatabase:
    """Open (creating if needed) the vault database, migrate it and bind the models to it.

    A file that is not a SQLite database, is cut short, belongs to another program or comes from
    a newer tui-agent raises StoreError before anything is written to it.
    """
    check_file(path)
    # Every transaction takes the write lock when it begins (BEGIN IMMEDIATE): a deferred one that
    # read first (FTS5 reads its config) cannot upgrade to a writer while another process holds the
    # lock, and fails with "database is locked" at once, whatever the busy timeout.
    db = pw.SqliteDatabase(str(path), pragmas=PRAGMAS, timeout=BUSY_TIMEOUT_S, autoconnect=True, lock_type="IMMEDIATE")
    try:
        db.connect(reuse_if_open=True)
        conn = db.connection()
        _check_schema(conn, path)
        _use_wal(db)
        # Migrations manage their own transactions; peewee's autocommit mode leaves the driver idle.
        migrations.migrate(conn, target_version)
    except StoreError:
        db.close()
        raise
    except DATABASE_ERRORS as exc:
        db.close()
        raise describe(exc, path) from None
    db.bind(MODELS, bind_refs=False, bind_backrefs=False)
    make_reserve(path)
    return db


def check_file(path: Path) -> None:
    """Refuse, without writing, a file SQLite would misread: not a database, or shorter than its header says."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database: move it aside and run again")
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
            size = handle.seek(0, 2)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise describe(exc, path) from None
    if not header:
        return  # an empty file is a new database
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise StoreError(
            f"{path} is not a tui-agent database (it is not a SQLite file): move it aside or restore it "
            f"from a backup, then run again (a new one is made where none exists); {NOT_CHANGED}"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_valid = header[24:28] == header[92:96]
    wal = Path(f"{path}-wal")
    wal_has_frames = wal.exists() and wal.stat().st_size > 32
    if header_valid and not wal_has_frames and pages * page_size > size:
        raise StoreError(
            f"{path} is damaged: it is cut short ({size:,} of {pages * page_size:,} bytes): restore it from a "
            f"backup, or salvage it with `sqlite3 {path} .recover | sqlite3 recovered.db` and put "
            f"recovered.db in its place; {NOT_CHANGED}"
        )


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    # One statement, so one snapshot: read apart, another process could create the schema between
    # the two reads (version 0, then tables) and a fresh vault would look like another program's.
    version, tables = conn.execute(
        "SELECT (SELECT user_version FROM pragma_user_version),"
        " (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')"
    ).fetchone()
    if version > migrations.LATEST:
        raise StoreError(
            f"{path} was written by a newer tui-agent: its schema version {version} is newer than this "
            f"tui-agent ({migrations.LATEST}): upgrade tui-agent (pip install -U tui-agent) or use another "
            f"vault (--vault PATH); {NOT_CHANGED}"
        )
    if version == 0 and tables:
        raise StoreError(
            f"{path} is a SQLite database of another program (it has {tables} table(s) but no "
            f"tui-agent schema version): use another vault (--vault PATH) or move the file aside; {NOT_CHANGED}"
        )


def _use_wal(db: pw.SqliteDatabase) -> None:
    """Switch a new database to WAL. The switch needs a lock SQLite does not wait for: retry it."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            mode = db.execute_sql("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                db.execute_sql("PRAGMA journal_mode = wal")
            return
        except pw.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
