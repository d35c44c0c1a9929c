"""`tui-agent db setup [--print]`: memory_sql's role, views and grants on a PostgreSQL store.

memory_sql sets them up by itself when the connected user may (a superuser or the owner of the
tables who can create roles); a user who may not is told in one line what to run, and the SQL
that `--print` gives a DBA makes memory_sql work for that user."""

from __future__ import annotations

import os
import subprocess

import psycopg
import pytest
from cli_fork import tui_agent_argv

from tui_agent.core import profiles
from tui_agent.core.store import history, location, pg_memory
from tui_agent.core.store.db import open_store
from tui_agent.core.store.models import Message
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.registry import default_registry
from tui_agent.core.vault import Vault

SECRET = "SECRET-MEMORY-ROW"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tui_agent_argv(), *args], capture_output=True, text=True, timeout=120)


def test_print_shows_the_sql_for_a_dba_without_connecting(tmp_path):
    vault = ["--vault", str(tmp_path / "v"), "--db", "postgresql://ann@127.0.0.1:1/nowhere"]
    done = cli("db", "setup", "--print", "--user", "ann", "--user", "bob", *vault)
    assert done.returncode == 0, done.stderr
    sql = done.stdout
    assert "CREATE ROLE tui_agent_memory NOLOGIN NOINHERIT;" in sql
    assert 'GRANT tui_agent_memory TO "ann";' in sql and 'GRANT tui_agent_memory TO "bob";' in sql
    assert "WITH (security_barrier)" in sql and "role IS DISTINCT FROM 'memory_tool'" in sql
    assert "GRANT UPDATE" not in sql and "GRANT INSERT" not in sql  # the role writes nothing: the app writes
    assert "SECURITY DEFINER" in sql and "ALTER FUNCTION tui_agent_memory.run_select(text, integer) OWNER TO" in sql
    assert "REVOKE ALL ON FUNCTION tui_agent_memory.run_select(text, integer) FROM PUBLIC;" in sql
    assert "media_blobs" not in sql and "settings" not in sql and "profiles" not in sql
    done = cli("db", "setup", "--print", *vault)
    assert 'GRANT tui_agent_memory TO "ann";' in done.stdout  # the URL's user by default
    done = cli("db", "setup", "--print", "--user", 'x"; DROP TABLE messages; --', *vault)
    assert done.returncode == 2 and done.stderr.startswith("error: not a plain PostgreSQL role name")
    assert done.stdout == ""


def test_print_needs_no_postgresql_store_nor_db(tmp_path):
    """A DBA's SQL is printed before any PostgreSQL store exists (the README's order: print, run it,
    then `db use`): no --db, the vault's store still SQLite, and nothing connects or is created."""
    vault = tmp_path / "v"
    done = cli("db", "setup", "--print", "--user", "ann", "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    assert "CREATE ROLE tui_agent_memory NOLOGIN NOINHERIT;" in done.stdout
    assert 'GRANT tui_agent_memory TO "ann";' in done.stdout and done.stderr == ""
    done = subprocess.run(
        [*tui_agent_argv(), "db", "setup", "--print", "--vault", str(vault)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PGUSER": "carol"},
    )
    assert done.returncode == 0 and 'GRANT tui_agent_memory TO "carol";' in done.stdout  # $PGUSER by default
    assert not (vault / "agent.db").exists()


def test_setup_is_for_postgresql_only(tmp_path):
    done = cli("db", "setup", "--vault", str(tmp_path / "v"))
    assert done.returncode == 1
    assert "`db setup` is for a PostgreSQL store" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
def test_setup_runs_again_harmlessly(env):
    for _ in range(2):
        done = cli("db", "setup", "--vault", str(env.vault.root))
        assert done.returncode == 0, done.stderr
        assert "memory_sql is set up in" in done.stdout and "role tui_agent_memory" in done.stdout
    assert pg_memory.state(Message._meta.database.connection()) == ""


@pytest.fixture
def limited_user(pg_cluster, monkeypatch, tmp_path):
    """A user who owns tui-agent's database but may not create roles; the admin's URL for the same database."""
    name = pg_cluster.create_database()
    user = pg_cluster.give_to_new_user(name)
    monkeypatch.setenv("TUI_AGENT_DB", pg_cluster.url(name, user=user))
    vault = Vault(tmp_path / "vault").init()
    db = open_store(location.resolve(vault.root))
    profiles.create_profile(
        "t", {"base_url": "http://127.0.0.1:9/v1", "chat_model": "m", "vision_model": "v", "image_model": "i"}
    )
    profiles.use_profile("t")
    yield vault, pg_cluster.url(name)
    db.close()
    pg_cluster.drop_database(name)
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        admin.execute(f'DROP ROLE "{user}"')


async def test_a_user_who_may_not_create_roles_is_told_what_to_run_and_the_dbas_sql_works(limited_user):
    vault, admin_url = limited_user
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "hello")
    history.add_message(conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1")

    async def recall():
        ctx = ToolContext(vault, profiles.active_profile(), None)
        return await default_registry().execute("memory_sql", {"query": "SELECT content FROM messages"}, ctx)

    result = await recall()
    assert result.error.startswith("memory_sql on PostgreSQL needs its own role and views"), result.error
    assert "`tui-agent db setup --print`" in result.error and "\n" not in result.error
    done = cli("db", "setup", "--vault", str(vault.root))
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert "could not set up memory_sql" in done.stderr and "`tui-agent db setup --print`" in done.stderr

    printed = cli("db", "setup", "--print", "--vault", str(vault.root))
    assert printed.returncode == 0, printed.stderr
    with psycopg.connect(admin_url, autocommit=True) as dba:
        dba.execute(printed.stdout)
        dba.execute(printed.stdout)  # a DBA may run it again
    result = await recall()
    assert result.data["rows"] == [["hello"]], result.to_dict()
