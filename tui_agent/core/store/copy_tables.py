"""The tables ``db copy`` moves, and their rows read, compared and written in batches on either
backend (plain SQL on each store's own database object: the models stay bound to whatever they were).

Values are compared and written in the destination's terms (``canon``): SQLite keeps flags as 0/1
and PostgreSQL as booleans; ``profiles.temperature`` is REAL in SQLite and TEXT in PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import peewee as pw

from tui_agent.core.store import backends

PAGE_ROWS = 1000


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]
    identity: bool = False  # an id PostgreSQL numbers itself: its sequence is moved past the copied ids
    unique: str = ""  # another column whose values are unique (a name)
    theirs_win: bool = False  # a row already there with other values keeps them (preferences)


TABLES: tuple[Table, ...] = (
    Table("settings", ("key",), theirs_win=True),
    Table("profiles", ("id",), identity=True, unique="name"),
    Table("conversations", ("id",), identity=True),
    Table("messages", ("id",), identity=True),
    Table("attachments", ("id",), identity=True),
    Table("message_revisions", ("id",), identity=True),
    Table("mcp_servers", ("id",), identity=True, unique="name"),
    Table("mcp_server_profiles", ("server_id", "profile_id")),
)


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def kind_of(declared: str) -> str:
    """The kind of value a column holds, from its declared type on either backend."""
    upper = declared.upper()
    if "BOOL" in upper:
        return "bool"
    if "INT" in upper:
        return "int"
    if any(word in upper for word in ("REAL", "DOUBLE", "FLOA", "NUMERIC")):
        return "float"
    if "BYTEA" in upper or "BLOB" in upper:
        return "bytes"
    return "text"


def columns(db: pw.Database, table: str) -> dict[str, str] | None:
    """Column name -> kind, in the table's order; None when the store has no such table (an older schema)."""
    found = backends.of(db).columns(table)
    return {name: kind_of(declared) for name, declared in found.items()} if found is not None else None


def _float_text(value: float) -> str:
    """A float as PostgreSQL prints a double precision (shortest round-trip form, no trailing .0)."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def canon(value: Any, kind: str) -> Any:
    """``value`` as a column of ``kind`` holds it (what is written, and what rows are compared by)."""
    if value is None:
        return None
    if kind == "bool":
        return bool(value) if isinstance(value, (bool, int, float)) else value
    if kind == "int":
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if kind == "float":
        if isinstance(value, (bool, int)):
            return float(value)
        if isinstance(value, str) and value.strip():
            try:
                return float(value)
            except ValueError:
                return value
        return value
    if kind == "bytes":
        return bytes(value) if isinstance(value, (bytearray, memoryview)) else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, int):
        return str(value)
    return value


def row_canon(row: Sequence[Any], kinds: Sequence[str]) -> tuple[Any, ...]:
    return tuple(canon(value, kind) for value, kind in zip(row, kinds, strict=True))


def count(db: pw.Database, table: str) -> int:
    return int(backends.of(db).execute(f"SELECT count(*) FROM {quoted(table)}").fetchone()[0])


def pages(
    db: pw.Database, table: Table, names: Sequence[str], size: int = PAGE_ROWS
) -> Iterator[list[tuple[Any, ...]]]:
    """Every row of ``table`` (the ``names`` columns), in key order, a page at a time (bounded memory:
    PostgreSQL's client reads a whole result at once)."""
    listed = ", ".join(quoted(name) for name in names)
    key = ", ".join(quoted(name) for name in table.key)
    at = [names.index(name) for name in table.key]
    marks = backends.of(db).placeholders(len(table.key))
    after: tuple[Any, ...] | None = None
    while True:
        if after is None:
            sql, params = f"SELECT {listed} FROM {quoted(table.name)} ORDER BY {key} LIMIT {size}", ()
        else:
            sql = f"SELECT {listed} FROM {quoted(table.name)} WHERE ({key}) > ({marks}) ORDER BY {key} LIMIT {size}"
            params = after
        rows = [tuple(row) for row in backends.of(db).execute(sql, params).fetchall()]
        if not rows:
            return
        yield rows
        if len(rows) < size:
            return
        after = tuple(rows[-1][index] for index in at)


def existing(
    db: pw.Database, table: Table, names: Sequence[str], keys: Sequence[tuple[Any, ...]]
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The destination's rows with these keys (key -> row)."""
    if not keys:
        return {}
    listed = ", ".join(quoted(name) for name in names)
    at = [names.index(name) for name in table.key]
    if len(table.key) == 1:
        marks = backends.of(db).placeholders(len(keys))
        sql = f"SELECT {listed} FROM {quoted(table.name)} WHERE {quoted(table.key[0])} IN ({marks})"
        found = backends.of(db).execute(sql, [key[0] for key in keys]).fetchall()
    else:  # a small table (MCP switches per profile): read it whole
        found = backends.of(db).execute(f"SELECT {listed} FROM {quoted(table.name)}").fetchall()
    wanted = set(keys)
    result = {}
    for row in found:
        key = tuple(row[index] for index in at)
        if key in wanted:
            result[key] = tuple(row)
    return result


def unique_values(db: pw.Database, table: Table) -> dict[Any, tuple[Any, ...]]:
    """The destination's values of ``table.unique`` -> the key of the row holding each."""
    if not table.unique:
        return {}
    key = ", ".join(quoted(name) for name in table.key)
    sql = f"SELECT {quoted(table.unique)}, {key} FROM {quoted(table.name)}"
    return {row[0]: tuple(row[1:]) for row in backends.of(db).execute(sql).fetchall()}


def insert(db: pw.Database, table: str, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` (values already in the destination's terms) in one round of statements."""
    if not rows:
        return
    listed = ", ".join(quoted(name) for name in names)
    sql = f"INSERT INTO {quoted(table)} ({listed}) VALUES ({backends.of(db).placeholders(len(names))})"
    cursor = db.cursor()
    try:
        cursor.executemany(sql, rows)
    finally:
        cursor.close()


def move_identity(db: pw.Database, table: Table) -> None:
    """Rows were copied with their ids: the store's next ids come after them (PostgreSQL's id
    sequence is moved past the highest id; SQLite numbers from the highest id by itself)."""
    if table.identity:
        backends.of(db).after_copy(table.name, table.key[0])
