"""Only the store's backends know which backend it is (issue 35): the rest of the code asks the
store (``tui_agent.core.store.backends.current()``) in the app's own terms. A backend check, a
peewee database class or a driver import anywhere else fails here; the files allowed say why."""

from __future__ import annotations

import re
from pathlib import Path

from repo_paths import ROOT

PACKAGE = ROOT / "tui_agent"

FORBIDDEN = re.compile(
    r"\bis_postgresql\b|\bPostgresqlDatabase\b|\bSqliteDatabase\b|^\s*(?:import|from)\s+(?:psycopg|sqlite3)\b"
    r"|\.kind\s*==\s*[\"'](?:sqlite|postgresql)[\"']",
    re.MULTILINE,
)

# Path (from tui_agent/) -> why it may: each is part of one backend's implementation.
ALLOWED = {
    "core/store/backends/__init__.py": "picks the backend: from the URL when opening, from the database in `of`",
    "core/store/backends/sqlite.py": "the SQLite backend",
    "core/store/backends/postgres.py": "the PostgreSQL backend",
    "core/store/backends/sqlite_file.py": "the SQLite backend's opener (file checks, WAL, its peewee database)",
    "core/store/migrations.py": "the SQLite backend's schema",
    "core/store/search.py": "the SQLite backend's search (FTS5)",
    "core/store/pg.py": "the PostgreSQL backend's opener (its peewee database, reconnecting)",
    "core/store/pg_together.py": "the PostgreSQL backend's statements sent together (one simple query)",
    "core/store/search_pg.py": "the PostgreSQL backend's search (its own read-only connection)",
    "core/store/pg_listen.py": "the PostgreSQL backend's listener (LISTEN on a connection of its own)",
    "core/store/driver.py": "imports peewee without psycopg, and psycopg when a PostgreSQL store opens",
    "core/store/errors.py": "the drivers' error classes, in words (one line for people)",
    "core/store/location.py": "parses the store URL: its kind is what `backends.backend_for` picks by",
    "core/tools/sql_run.py": "the SQLite backend's memory_sql runner (in the worker process)",
    "core/tools/sql_guard.py": "the SQLite backend's memory_sql guard (SQLite's authorizer)",
    "core/tools/pg_run.py": "the PostgreSQL backend's memory_sql runner (in the worker process)",
}


def offenders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in ALLOWED:
            continue
        text = path.read_text(encoding="utf-8")
        hits = [match.group(0).strip() for match in FORBIDDEN.finditer(text)]
        if hits:
            found[relative] = hits
    return found


def test_no_backend_check_outside_the_backends():
    assert offenders() == {}, (
        "ask the store (backends.current(): its methods say what the app needs) instead of which backend it is"
    )


def test_every_allowed_file_exists_and_needs_its_place():
    """An allowed file that no longer holds a backend check is taken off the list (it would hide one later)."""
    for relative in ALLOWED:
        path = PACKAGE / relative
        assert path.is_file(), relative
        assert FORBIDDEN.search(path.read_text(encoding="utf-8")), f"{relative} needs no place on the list"


def test_the_check_finds_what_it_forbids(tmp_path: Path):
    for line in (
        "import sqlite3",
        "    import psycopg",
        "from psycopg import errors",
        "if url.is_postgresql:",
        "isinstance(db, pw.PostgresqlDatabase)",
        "db = pw.SqliteDatabase(path)",
        'if url.kind == "postgresql":',
    ):
        assert FORBIDDEN.search(line), line
    for line in ("# sqlite3 and psql are commands", "store.name == 'PostgreSQL'", "importlib.import_module(runner)"):
        assert not FORBIDDEN.search(line), line
