"""What the two backends say differently, in one place: placeholders in hand-written SQL and
"insert or replace".

Hand-written queries are written once, in SQLite's placeholder style (``?`` and ``?N``), and
translated for psycopg (``%s``) when the models are bound to PostgreSQL.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import peewee as pw

_PLACEHOLDER = re.compile(r"\?(\d*)|%")


def is_postgresql(db: pw.Database) -> bool:
    return isinstance(db, pw.PostgresqlDatabase)


@functools.lru_cache(maxsize=256)
def _translate(sql: str) -> tuple[str, tuple[int, ...]]:
    """SQLite-style SQL -> (psycopg SQL, the index of the parameter each ``%s`` takes). A plain
    ``?`` takes the parameter after the highest one used so far, as SQLite numbers them."""
    order: list[int] = []
    highest = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal highest
        if match.group(0) == "%":
            return "%%"
        number = int(match.group(1)) if match.group(1) else highest + 1
        highest = max(highest, number)
        order.append(number - 1)
        return "%s"

    return _PLACEHOLDER.sub(swap, sql), tuple(order)


def query(db: pw.Database, sql: str, params: Sequence[Any] = ()) -> tuple[str, list[Any]]:
    """``sql`` and ``params`` as the database's driver takes them."""
    if not is_postgresql(db):
        return sql, list(params)
    translated, order = _translate(sql)
    return translated, [params[index] for index in order]


def execute(db: pw.Database, sql: str, params: Sequence[Any] = ()) -> Any:
    """``db.execute_sql`` for SQL written in SQLite's placeholder style."""
    text, values = query(db, sql, params)
    return db.execute_sql(text, values)


def raw(model: type[pw.Model], sql: str, *params: Any) -> Any:
    """``model.raw`` for SQL written in SQLite's placeholder style."""
    text, values = query(model._meta.database, sql, params)
    return model.raw(text, *values)


def upsert(model: type[pw.Model], **values: Any) -> None:
    """Insert the row, or replace the values of the row with the same primary key (SQLite's
    INSERT OR REPLACE, which PostgreSQL does not have)."""
    meta = model._meta
    keys = meta.get_primary_keys()
    key_names = {field.name for field in keys}
    update = {meta.fields[name]: value for name, value in values.items() if name not in key_names}
    model.insert(**values).on_conflict(conflict_target=list(keys), update=update).execute()


FIRST_RUN_LOCK = 0x7475_6962  # "tuib": the first run's default profile


def serialize(db: pw.Database, key: int) -> None:
    """Inside a transaction: wait until no other writer holds ``key`` (PostgreSQL's advisory lock,
    released at commit). SQLite needs nothing: every transaction there takes the write lock."""
    if is_postgresql(db):
        db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (key,))
