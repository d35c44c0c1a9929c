"""memory_sql tests on both stores: which one is bound, and a PostgreSQL store's whole content."""

from __future__ import annotations

from store_rows import rows

from tui_agent.core.store.models import Message


def is_postgresql() -> bool:
    return (
        getattr(Message._meta.database, "store_url", None) is not None
        and Message._meta.database.store_url.is_postgresql
    )


def pg_dump() -> list[str]:
    """Every table and column of the store, and every row of each: what a refusal must leave as it was."""
    tables = [
        row["t"]
        for row in rows(
            "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        )
    ]
    columns = rows(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3"
    )
    dump = [repr(tables), repr(columns)]
    for table in tables:
        dump.append(repr(rows(f"SELECT * FROM {table} ORDER BY 1")))
    return dump
