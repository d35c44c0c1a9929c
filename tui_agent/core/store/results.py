"""What statements sent together returned (``Result``). store/batch.py is the entry point; each
backend sends them its own way (the PostgreSQL one: store/pg_together.py).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import peewee as pw

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


def result_of(cursor: Any) -> Result:
    """What a cursor returned (no rows for a statement that returns none)."""
    if cursor.description is None:
        return Result([], [])
    return Result([column[0] for column in cursor.description], [tuple(row) for row in cursor.fetchall()])
