"""The PostgreSQL tests' own databases (tests/conftest.py): a test whose store is opened at once
gets a copy of a database migrated once per test process (``pg_store_template``), never one an
earlier test used or changed; what a test does to its copy reaches neither the template nor the
next test's copy."""

from __future__ import annotations

import psycopg
import pytest
from conftest import database_for_test

from tui_agent.core.store import pg_memory, pg_migrations

USER_OBJECTS = """
SELECT n.nspname, c.relname, c.relkind, c.relacl::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2
"""
USER_ROUTINES = """
SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid) FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3
"""


def state(url: str) -> dict[str, object]:
    """What a test can see and change in its database: schemas, tables, views, sequences,
    functions, triggers, the schema version and every table's rows."""
    with psycopg.connect(url, autocommit=True) as conn:
        objects = conn.execute(USER_OBJECTS).fetchall()
        tables = [f'"{schema}"."{name}"' for schema, name, kind, _acl in objects if kind == "r"]
        return {
            "schemas": conn.execute("SELECT nspname, nspacl::text FROM pg_namespace ORDER BY 1").fetchall(),
            "objects": objects,
            "routines": conn.execute(USER_ROUTINES).fetchall(),
            "triggers": conn.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1").fetchall(),
            "version": pg_migrations.current_version(conn),
            "rows": {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in tables},
            "sequences": conn.execute("SELECT sequencename, last_value FROM pg_sequences ORDER BY 1").fetchall(),
        }


def change_everything(url: str) -> None:
    """What tests do to their database: rows, memory_sql's schema and role grants, a dropped
    table, a table of another program, the schema version, a database setting."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES ('kept?', 'now', 'now')")
        conn.execute("INSERT INTO settings (key, value) VALUES ('theme', 'dark')")
        pg_memory.apply(conn)
        conn.execute("DROP TABLE mcp_server_profiles")
        conn.execute("CREATE TABLE other_program (x int)")
        conn.execute("UPDATE tui_agent_schema SET version = 99")
        dbname = conn.execute("SELECT current_database()").fetchone()[0]
        conn.execute(f'ALTER DATABASE "{dbname}" SET search_path = tui_agent_memory')


def test_each_test_gets_a_fresh_copy_whatever_the_test_before_did(pg_cluster, pg_store_template, monkeypatch):
    first = database_for_test(pg_cluster, monkeypatch, pg_store_template)
    url = next(first)
    fresh = state(url)
    assert fresh["version"] == pg_migrations.LATEST
    assert fresh["rows"] and not any(rows for table, rows in fresh["rows"].items() if "tui_agent_schema" not in table)
    change_everything(url)
    assert state(url) != fresh
    with pytest.raises(StopIteration):
        next(first)  # the test's end: its database is dropped

    second = database_for_test(pg_cluster, monkeypatch, pg_store_template)
    other = next(second)
    assert other != url
    assert state(other) == fresh
    with psycopg.connect(other, autocommit=True) as conn:
        assert conn.execute("SHOW search_path").fetchone()[0] == '"$user", public'
    with pytest.raises(StopIteration):
        next(second)
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database")]
    assert url.rsplit("/", 1)[1] not in names and other.rsplit("/", 1)[1] not in names


def test_nobody_can_change_the_template(pg_cluster, pg_store_template):
    with pytest.raises(psycopg.OperationalError, match="not currently accepting connections"):
        psycopg.connect(pg_cluster.url(pg_store_template)).close()


def test_an_empty_database_is_still_empty(pg_url):
    """``pg_url`` (a test that sets its database up itself: a first run, another program's tables)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert pg_migrations.current_version(conn) == 0
        assert conn.execute(USER_OBJECTS).fetchall() == []
