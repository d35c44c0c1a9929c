"""Rows of the store the test's vault uses (SQLite or PostgreSQL), read through the models' bound
database: what a test checks is stored, whichever backend stored it."""

from __future__ import annotations

from typing import Any

from tui_agent.core.store import backends


def rows(sql: str, *params: Any) -> list[dict[str, Any]]:
    """``sql`` (``{p}`` for each placeholder: the store's own) run on the bound store: each row as a dict."""
    store = backends.current()
    cursor = store.execute(sql.format(p=store.param), params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def value(sql: str, *params: Any) -> Any:
    """The first column of the first row."""
    found = rows(sql, *params)
    return next(iter(found[0].values())) if found else None
