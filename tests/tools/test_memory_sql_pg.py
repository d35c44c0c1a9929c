"""memory_sql on PostgreSQL: attacks only PostgreSQL has, refused by its parser (pglast) and, with
the parser switched off, by the server itself (the role's grants, the READ ONLY transaction, the
timeouts); the UPDATE approval flow as on SQLite. The shared corpus runs on both stores in
tests/tools/test_memory_sql.py; `tui-agent db setup` is tested in tests/tools/test_memory_sql_pg_setup.py."""

from __future__ import annotations

import json

import psycopg
import pytest
from memory_sql_helpers import pg_dump, sql

from tui_agent.core import profiles
from tui_agent.core.store import backends, history
from tui_agent.core.store.models import Message
from tui_agent.core.tools import memory_sql, pg_run
from tui_agent.core.tools.pg_guard import Checked
from tui_agent.core.tools.registry import default_registry
from tui_agent.core.tools.sql_run import Limits, Request

POSTGRESQL = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
pytestmark = POSTGRESQL
SECRET = "SECRET-MEMORY-ROW"


@pytest.fixture
def mem(env):
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "What is a 1T parameter model?")
    history.add_message(conversation.id, "assistant", "A model with a trillion parameters.")
    history.add_message(
        conversation.id, "memory_tool", f'{{"rows": "{SECRET}"}}', tool_name="memory_sql", tool_call_id="c1"
    )
    assert backends.current().prepare_memory() == ""
    return env


PARSER_REFUSES = [
    ("SELECT pg_read_file('/etc/passwd')", "refused: the function pg_read_file is not allowed"),
    ("SELECT pg_read_binary_file('/etc/passwd')", "refused: the function pg_read_binary_file"),
    ("SELECT * FROM pg_ls_dir('.')", "refused: the function pg_ls_dir"),
    ("COPY messages TO '/tmp/tui-agent-evil'", "refused: COPY (reading or writing files) is not allowed"),
    ("COPY (SELECT * FROM messages) TO PROGRAM 'id'", "refused: COPY"),
    ("COPY messages FROM '/etc/passwd'", "refused: COPY"),
    ("SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)", "refused: the function dblink"),
    ("SELECT lo_import('/etc/passwd')", "refused: the function lo_import"),
    ("SELECT lo_export(1, '/tmp/tui-agent-evil')", "refused: the function lo_export"),
    ("SET ROLE postgres", "refused: SET role is not allowed"),
    ("RESET ROLE", "refused: RESET role is not allowed"),
    ("SET SESSION AUTHORIZATION postgres", "refused: SET session_authorization"),
    ("SELECT set_config('role', 'postgres', false)", "refused: the function set_config"),
    ("SELECT set_config('search_path', 'public', true)", "refused: the function set_config"),
    ("SELECT pg_catalog.set_config('role', 'postgres', true)", "refused: the function set_config"),
    ("SELECT pg_sleep(30)", "refused: the function pg_sleep"),
    ("SELECT current_setting('data_directory')", "refused: the function current_setting"),
    ("SHOW data_directory", "refused: SHOW data_directory"),
    ("SELECT version()", "refused: the function version"),
    ("SELECT * FROM pg_catalog.pg_roles", "refused: reading pg_catalog.pg_roles"),
    ("SELECT rolname FROM pg_roles", "refused: reading pg_roles"),
    ("SELECT * FROM pg_authid", "refused: reading pg_authid"),
    ("SELECT * FROM pg_stat_activity", "refused: reading pg_stat_activity"),
    ("SELECT * FROM information_schema.tables", "refused: reading information_schema.tables"),
    ("SELECT table_name FROM information_schema.columns WHERE column_name = 'content'", "refused: reading"),
    ("SELECT 'messages'::regclass::oid", "refused: the type regclass"),
    ("WITH pg_class AS (SELECT 1) SELECT * FROM pg_class", "refused: a WITH clause may not define a name"),
    ("SELECT * FROM messages FOR UPDATE", "refused: SELECT ... FOR UPDATE / FOR SHARE (locking rows)"),
    ("SELECT * FROM messages FOR SHARE SKIP LOCKED", "refused: SELECT ... FOR UPDATE"),
    ("WITH x AS (UPDATE messages SET content = 'x' RETURNING *) SELECT * FROM x", "refused: UPDATE of messages inside"),
    ("WITH x AS (DELETE FROM messages RETURNING *) SELECT count(*) FROM x", "refused: DELETE FROM messages inside"),
    ("SELECT content INTO TEMP stolen FROM messages", "refused: SELECT INTO (creating a table)"),
    ("CREATE TEMP TABLE t AS SELECT 1", "refused: CREATE TEMP (changing the database schema)"),
    ("DO $$ BEGIN DELETE FROM public.messages; END $$", "refused: a DO block (running code) is not allowed"),
    ("CALL some_procedure()", "refused: CALL (running a procedure)"),
    ("LISTEN tui_agent", "refused: LISTEN is not allowed"),
    ("NOTIFY tui_agent, 'x'", "refused: NOTIFY is not allowed"),
    ("SELECT pg_notify('tui_agent', 'x')", "refused: the function pg_notify"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "refused: the function pg_terminate_backend"),
    ("SELECT pg_cancel_backend(1)", "refused: the function pg_cancel_backend"),
    ("SELECT * FROM media_blobs", "refused: reading media_blobs is not allowed"),
    ("SELECT * FROM media_paths", "refused: reading media_paths"),
    ("SELECT * FROM settings", "refused: reading settings"),
    ("SELECT * FROM profiles", "refused: reading profiles"),
    ("SELECT * FROM mcp_servers", "refused: reading mcp_servers"),
    ("SELECT * FROM public.messages WHERE role = 'memory_tool'", "refused: reading public.messages"),
    ("SELECT * FROM tui_agent_memory.messages", "refused: reading tui_agent_memory.messages"),
    ("UPDATE public.messages SET content = 'x'", "refused: UPDATE of public.messages"),
    ("SELECT query_to_xml('select * from public.settings', true, true, '')", "refused: the function query_to_xml"),
    ("SELECT ts_stat('select to_tsvector(content) from public.messages')", "refused: the function ts_stat"),
    ("SELECT nextval('messages_id_seq')", "refused: the function nextval"),
    ("PREPARE p AS SELECT 1", "refused: PREPARE"),
    ("EXPLAIN ANALYZE SELECT 1", "refused: EXPLAIN"),
    ("SELECT 1; RESET ROLE", "refused: one statement per call"),
    ("UPDATE messages SET content = 'x' WHERE id = 1 RETURNING *", "refused: RETURNING is not allowed"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("query", "words"), PARSER_REFUSES)
async def test_postgresql_attacks_are_refused_by_its_parser(mem, query, words):
    profiles.set_field(mem.profile, "sql_update_approval", "auto")
    before = pg_dump()
    result = await sql(mem, query)
    assert result.error.startswith(words), result.error
    assert pg_dump() == before
    assert SECRET not in result.to_json()


# Switched off the parser, the server alone: (kind the statement runs as, query, refusal).
SERVER_REFUSES = [
    (
        "select",
        "SELECT * FROM public.messages WHERE role = 'memory_tool'",
        "refused: permission denied for table messages",
    ),
    ("select", "SELECT * FROM public.settings", "refused: permission denied for table settings"),
    ("select", "SELECT * FROM public.profiles", "refused: permission denied for table profiles"),
    ("select", "SELECT * FROM public.mcp_servers", "refused: permission denied for table mcp_servers"),
    ("select", "SELECT * FROM public.media_blobs", "refused: permission denied for table media_blobs"),
    ("select", "SELECT * FROM pg_authid", "refused: permission denied for table pg_authid"),
    ("select", "SELECT pg_read_file('/etc/passwd')", "refused: permission denied for function pg_read_file"),
    ("select", "SELECT lo_import('/etc/passwd')", "refused: permission denied for function lo_import"),
    ("select", "SELECT current_setting('data_directory')", "refused: must be superuser"),
    ("select", "SELECT pg_sleep(30)", "stopped: the query ran longer than the 1s time limit"),
    ("select", "SELECT * FROM messages FOR UPDATE", "refused: permission denied for view messages"),
    ("select", "SELECT nextval('public.messages_id_seq')", "refused: permission denied for sequence messages_id_seq"),
    # A data-modifying CTE never reaches the executor: the statement is first read under LIMIT 0 as a
    # subquery (the header naming the columns), where PostgreSQL refuses it.
    (
        "select",
        "WITH x AS (UPDATE messages SET content = 'x' RETURNING *) SELECT * FROM x",
        "SQL error: WITH clause containing a data-modifying statement must be at the top level",
    ),
    ("select", "SELECT 1; DELETE FROM public.messages", 'SQL error: syntax error at or near ";"'),
    # An UPDATE is never sent as one (its dry run is a SELECT): sent anyway, it cannot run.
    (
        "update",
        "UPDATE messages SET role = 'user'",
        "SQL error: WITH clause containing a data-modifying statement must be at the top level",
    ),
    (
        "update",
        "UPDATE public.messages SET content = 'pwned'",
        "SQL error: WITH clause containing a data-modifying statement must be at the top level",
    ),
]


@pytest.mark.parametrize(("kind", "query", "words"), SERVER_REFUSES)
def test_the_server_alone_refuses_them_too(mem, monkeypatch, kind, query, words):
    """Defence in depth: with pglast switched off, the role's grants, the security-definer function
    and the READ ONLY transaction stop them (tests/test_memory_sql_pg_barrier.py: the role's escapes).
    Only pg_sleep is stopped by the time limit (1 s); the others have a limit of their own, far from
    any machine's speed: they are refused, never slow, and a loaded machine must not make them so."""
    monkeypatch.setattr(pg_run, "check", lambda sql: Checked(kind, sql))
    before = pg_dump()
    limit_s = 1 if "pg_sleep" in query else 600
    answer = pg_run.run_guarded(postgres_request(query, Limits(time_limit_s=limit_s)))
    assert answer["ok"] is False and answer["error"].startswith(words), answer
    assert pg_dump() == before
    assert SECRET not in json.dumps(answer)


def postgres_request(query: str, limits: Limits | None = None) -> Request:
    url = Message._meta.database.store_url
    connect = {"dbname": url.dbname, **url.connect_args()}
    return Request("", query, limits or Limits(), {"connect": connect, "where": url.where()})


def test_the_server_hides_memory_rows_and_the_statement_runs_as_the_role_in_a_timed_read_only_transaction(
    mem, monkeypatch
):
    monkeypatch.setattr(pg_run, "check", lambda sql: Checked("select", sql))
    # limits far from any machine's speed: how the limit reaches the server is checked, not how fast it is
    answer = pg_run.run_guarded(
        postgres_request("SELECT content FROM messages WHERE role = 'memory_tool'", Limits(time_limit_s=600))
    )
    assert answer["ok"] and answer["rows"] == []
    query = (
        "SELECT current_user, session_user <> current_user, current_setting('transaction_read_only'), "
        "current_setting('statement_timeout'), current_setting('lock_timeout'), "
        "current_setting('idle_in_transaction_session_timeout'), current_setting('search_path')"
    )
    answer = pg_run.run_guarded(postgres_request(query, Limits(time_limit_s=600.5)))
    assert answer["rows"] == [
        ["tui_agent_memory", True, "on", "600500ms", "1s", "602500ms", "tui_agent_memory, pg_catalog, pg_temp"]
    ], answer


async def test_a_leaky_where_clause_learns_nothing_of_hidden_rows(mem):
    """The views are security barriers: a WHERE that fails on a hidden row never sees it."""
    query = "SELECT id FROM messages WHERE CASE WHEN content LIKE '%SECRET-MEMORY%' THEN 1 / (id - id) ELSE 0 END = 1"
    result = await sql(mem, query)
    assert result.is_ok and result.data["rows"] == [], result.to_dict()


async def test_generate_series_bombs_stop_at_the_row_cap_or_the_time_limit(mem, monkeypatch):
    result = await sql(mem, "SELECT generate_series(1, 1000000000) AS g")  # streamed: one FETCH of the cap
    assert result.is_ok, result.error
    assert result.data["row_count"] == 200 and "row limit reached" in result.data["truncated"]
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 1.0)
    for query in ("SELECT count(*) FROM generate_series(1, 100000000000)", "SELECT g FROM generate_series(1, 1e9) g"):
        result = await sql(mem, query)
        assert result.error.startswith("stopped: the query ran longer than the 1s time limit"), (query, result.error)
    # the size limit, with the tests' own time limit: under load 12 the 1 s above ended it first
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 600.0)
    result = await sql(mem, "SELECT repeat('x', 2000000)")
    assert result.error == "stopped: a value exceeded the 1,000,000 byte size limit"


async def test_sqlite_habits_work_group_concat_and_unnamed_subqueries(mem):
    result = await sql(mem, "SELECT group_concat(role), count(*) FROM (SELECT role FROM messages ORDER BY id)")
    assert result.data["rows"] == [["user,assistant", 2]], result.to_dict()


async def test_an_update_waits_for_a_locked_message_only_as_long_as_the_lock_timeout(mem):
    profiles.set_field(mem.profile, "sql_update_approval", "auto")
    url = Message._meta.database.store_url
    with psycopg.connect(dbname=url.dbname, **url.connect_args()) as other:
        other.execute("SELECT 1 FROM messages WHERE id = 1 FOR UPDATE")
        result = await sql(mem, "UPDATE messages SET content = 'x' WHERE id = 1")
    assert result.error.startswith("stopped: another writer held these messages for too long (lock timeout)")
    assert Message.get_by_id(1).content == "What is a 1T parameter model?"


def test_the_model_is_told_it_writes_postgresql(mem):
    (schema,) = [s for s in default_registry().schemas() if s["function"]["name"] == "memory_sql"]
    assert schema["function"]["description"].startswith("Run ONE PostgreSQL statement (group_concat works too)")


async def test_the_first_memory_sql_after_the_server_ended_the_connection_works(mem):
    """Issue 35: after a restart (here ``pg_terminate_backend``, found only when the connection is
    used) the first memory_sql failed with "terminating connection due to administrator command":
    the store's read of memory_sql's set-up goes again, once, on a new connection."""
    from tui_agent.core.tools.base import ToolContext

    ctx = ToolContext(mem.vault, mem.reload_profile(), None)  # the turn has its profile: the tool reads first
    db = Message._meta.database
    pid = db.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
    with psycopg.connect(dbname=db.store_url.dbname, autocommit=True, **db.store_url.connect_args()) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    result = await default_registry().execute("memory_sql", {"query": "SELECT count(*) AS n FROM messages"}, ctx)
    assert result.status == "ok", result.error
    assert result.data["rows"] == [[2]]
    assert db.execute_sql("SELECT pg_backend_pid()").fetchone()[0] != pid
