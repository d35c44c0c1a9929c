"""What statements sent together returned (``Result``), and how a server gets them: one psycopg
pipeline (the PostgreSQL backend's ``Store.together``). store/batch.py is the entry point.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import peewee as pw

log = logging.getLogger("tui_agent.store")
Statement = tuple[str, Any]  # SQL and its parameters: a sequence, or a mapping for named ones


@dataclass
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def named(self) -> list[Any]:
        """The rows as named tuples, with the columns' names (as peewee's ``namedtuples()``)."""
        row_type = collections.namedtuple("Row", self.columns)  # type: ignore[misc]
        return [row_type(*row) for row in self.rows]

    def models(self, model: type[pw.Model]) -> list[Any]:
        """Rows of ``SELECT *`` as instances of ``model``, as peewee makes them from a query."""
        columns = model._meta.columns
        fields = [columns.get(name) for name in self.columns]
        made = []
        for row in self.rows:
            values = {
                name: field.python_value(value) if field is not None and value is not None else value
                for name, field, value in zip(self.columns, fields, row, strict=True)
            }
            made.append(model(__no_default__=1, **values))
        return made


def pipelined(
    db: pw.Database, statements: Sequence[Statement], atomic: bool, *, repeatable: bool = False
) -> list[Result]:
    """``together`` for a server: one psycopg pipeline (the PostgreSQL backend's); ``repeatable``:
    see batch.together."""
    from tui_agent.core.store import pg, schema_guard
    from tui_agent.core.store.errors import StoreError

    reads = all(pg.is_read(sql) for sql, _ in statements)
    if not reads and (reason := schema_guard.refusal()) is not None:
        raise StoreError(reason)
    sent = [(sql, params if params is not None else ()) for sql, params in statements]
    if atomic:
        sent = [("BEGIN", ()), *sent, ("COMMIT", ())]
    try:
        results = _pipeline(db, sent)
    except (pw.OperationalError, pw.InterfaceError) as exc:
        # A read whose connection the server had ended goes again, once, on a new connection (as
        # pg.ReconnectingDatabase does for one statement); a write is never sent twice, unless
        # sending it again comes to the same end (``repeatable``).
        if not (reads or repeatable) or db.in_transaction() or db.is_connection_usable():
            raise
        log.info("the server ended the connection (%s): the statements go again on a new one", exc)
        results = _pipeline(db, sent)
    return results[1:-1] if atomic else results


def _pipeline(db: pw.Database, sent: list[tuple[str, Any]]) -> list[Result]:
    conn = db.connection()  # a connection found dead is let go of first (pg.ReconnectingDatabase)
    # peewee's own mapping of driver errors to its classes (what its cursor raises; not in its stubs).
    with pw.ExceptionWrapper(pw.EXCEPTIONS):  # type: ignore[attr-defined]
        try:
            with conn.pipeline():
                cursors = [conn.execute(sql, params) for sql, params in sent]
        except Exception:
            if not conn.closed:
                conn.rollback()  # the transaction the statements opened, if any
            raise
        return [result_of(cursor) for cursor in cursors]


def result_of(cursor: Any) -> Result:
    """What a cursor returned (no rows for a statement that returns none)."""
    if cursor.description is None:
        return Result([], [])
    return Result([column[0] for column in cursor.description], [tuple(row) for row in cursor.fetchall()])
