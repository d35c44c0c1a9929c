"""Opening the database: WAL, busy timeout, migrations, model binding."""

from __future__ import annotations

from pathlib import Path

import peewee as pw

from tui_agent.core.store import migrations
from tui_agent.core.store.models import MODELS

PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "normal",
    "foreign_keys": 1,
    "busy_timeout": 10_000,
}


def open_database(path: Path, *, target_version: int = migrations.LATEST) -> pw.SqliteDatabase:
    """Open (creating if needed) the vault database, migrate it and bind the models to it."""
    db = pw.SqliteDatabase(str(path), pragmas=PRAGMAS, timeout=10, autoconnect=True)
    db.connect(reuse_if_open=True)
    conn = db.connection()
    # Migrations manage their own transactions; peewee's autocommit mode leaves the driver idle.
    migrations.migrate(conn, target_version)
    db.bind(MODELS, bind_refs=False, bind_backrefs=False)
    return db
