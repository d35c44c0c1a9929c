"""The PostgreSQL store itself: its schema versions and upgrades, what it refuses without writing,
and two vault folders (two machines) sharing one database."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from cli_fork import tui_agent_argv

from tui_agent.core.store import history, location, pg_migrations
from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.pg import open_postgres


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tui_agent_argv(), *args], capture_output=True, text=True, timeout=60)


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_each_step_upgrades_a_database_keeping_its_rows(pg_url: str):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert pg_migrations.migrate(conn, target=1) == 1
        conn.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES ('old', 'x', 'x')")
        conn.execute(
            "INSERT INTO messages (conversation_id, role, content, created_at) VALUES (1, 'user', 'zebra crossing', 'x')"
        )
        assert pg_migrations.current_version(conn) == 1
    db = open_postgres(location.parse(pg_url))
    try:
        with psycopg.connect(pg_url) as conn:
            assert pg_migrations.current_version(conn) == pg_migrations.LATEST
            # The search index (step 2) covers the rows written before it.
            plan = "\n".join(
                row[0]
                for row in conn.execute(
                    "EXPLAIN SELECT id FROM messages WHERE to_tsvector('simple', content) @@ to_tsquery('simple', 'zebra')"
                )
            )
        assert "messages_search" in plan or "Seq Scan" in plan  # tiny tables may be scanned; the index exists:
        assert [m.content for m in history.recent_messages(1)] == ["zebra crossing"]
        assert {"media_blobs", "media_paths"} <= tables(pg_url)
    finally:
        db.close()


def test_a_newer_schema_is_refused_in_one_line_and_not_written(pg_url: str):
    db = open_postgres(location.parse(pg_url))
    db.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE tui_agent_schema SET version = %s", (pg_migrations.LATEST + 1,))
        before = conn.execute("SELECT count(*) FROM profiles").fetchone()[0]
    with pytest.raises(StoreError) as caught:
        open_postgres(location.parse(pg_url))
    message = str(caught.value)
    assert "\n" not in message and "newer tui-agent" in message and "did not change it" in message
    result = cli("history", "list")  # $TUI_AGENT_DB names the database (the pg_url fixture)
    assert result.returncode == 1 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM profiles").fetchone()[0] == before == 0


def test_another_programs_database_is_refused(pg_url: str):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StoreError, match="another program's tables"):
        open_postgres(location.parse(pg_url))
    assert tables(pg_url) == {"invoices"}


def test_a_missing_database_and_a_refused_login_are_one_line(pg_cluster, pg_url: str):
    missing = pg_cluster.url("no_such_database")
    result = cli("--db", missing, "history", "list")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "no_such_database" in result.stderr and "createdb" in result.stderr


@pytest.mark.slow
def test_two_vaults_on_one_database_share_one_history(pg_url: str, tmp_path: Path, fake_llm):
    """Machine A and machine B: two vault folders, the same database (by `db use`, not the
    environment). What one stores, the other lists and searches."""
    import os

    os.environ.pop(location.DB_ENV, None)  # each vault remembers the URL itself
    a, b = tmp_path / "a", tmp_path / "b"
    for vault in (a, b):
        result = cli("--vault", str(vault), "db", "use", pg_url)
        assert result.returncode == 0, result.stderr
    created = cli("--vault", str(a), "profile", "create", "loop", "--from", "default")
    assert created.returncode == 0, created.stderr
    for key, value in (("base_url", fake_llm.base_url), ("chat_model", "m"), ("vision_model", "m")):
        assert cli("--vault", str(a), "profile", "set", "--profile", "loop", key, value).returncode == 0
    from fake_openai import Reply

    fake_llm.script(Reply(text="the answer is forty-two"))
    asked = cli("--vault", str(a), "ask", "--profile", "loop", "--new", "what is the answer?")
    assert asked.returncode == 0, asked.stderr
    listed = cli("--vault", str(b), "history", "list")
    assert "what is the answer?" in listed.stdout, listed.stdout
    found = cli("--vault", str(b), "history", "search", "forty")
    assert found.returncode == 0 and "forty" in found.stdout, found.stderr
    assert cli("--vault", str(b), "profile", "list").stdout.count("loop") == 1


@pytest.mark.slow
def test_machines_starting_at_once_on_a_new_database_make_one_profile(pg_url: str, tmp_path: Path):
    """Eight first runs at the same moment (eight vault folders, one new database): each migrates or
    waits for the one that does, and exactly one default profile is made."""
    processes = [
        subprocess.Popen(
            [*tui_agent_argv(), "--vault", str(tmp_path / f"v{i}"), "profile", "list"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.count("default") == 1, out
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM profiles").fetchone()[0] == 1
        assert conn.execute("SELECT version FROM tui_agent_schema").fetchall() == [(pg_migrations.LATEST,)]
