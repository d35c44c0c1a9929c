"""memory_sql on PostgreSQL stays in its role whatever the statement runs (issue 34, item 1).

PostgreSQL calls a one-argument function written as a field of its argument (``m.row_to_json``,
``(q::text).ts_stat``), and ``ts_stat`` runs its text as SQL, which could call
``set_config('role', session_user, true)`` and go on as the app's own user. The barrier is the
server's: the statement runs inside a SECURITY DEFINER function owned by memory_sql's role, in
which PostgreSQL refuses any change of role. Here the parser (pglast) is switched off, so the
server alone stands, with the app's user a superuser and not: nothing comes back but the views,
no file is read, no session is ended, and a declined UPDATE leaves no trace on the server.
Through the tool, the parser refuses these statements first (attribute notation included).
"""

from __future__ import annotations

import json
import re
import subprocess

import psycopg
import pytest
from cli_fork import tui_agent_argv
from fake_openai import Reply
from memory_sql_helpers import pg_dump

from tui_agent.core import profiles
from tui_agent.core.store import backends, history, location, pg_memory
from tui_agent.core.store.db import open_store
from tui_agent.core.store.models import Message, MessageRevision, Setting
from tui_agent.core.tools import pg_run
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.pg_guard import Checked
from tui_agent.core.tools.registry import default_registry
from tui_agent.core.tools.sql_run import Limits, Request
from tui_agent.core.vault import Vault

SECRET = "SECRET-MEMORY-ROW"
PROMPT = "PROMPT-SECRET-WORDS"
SETTING = "SETTING-SECRET-VALUE"
SWITCH = "SELECT to_tsvector(set_config('role', session_user, true))"


def stat(query: str) -> str:
    """A scalar subquery over ts_stat(query): ts_stat runs ``query`` as SQL."""
    return f"(SELECT string_agg(word, ' ') FROM ts_stat($q${query}$q$))"


def after_switch(query: str) -> str:
    """The role switched back by one ts_stat, then ``query`` read by another."""
    return f"SELECT {stat(SWITCH)} AS switched, {stat(query)} AS got"


ESCAPES = [
    after_switch("SELECT to_tsvector('simple', content) FROM public.messages WHERE role = 'memory_tool'"),
    after_switch("SELECT to_tsvector('simple', system_prompt) FROM public.profiles"),
    after_switch("SELECT to_tsvector('simple', value) FROM public.settings"),
    after_switch("SELECT to_tsvector('simple', env) FROM public.mcp_servers"),
    after_switch("SELECT to_tsvector('simple', pg_read_file('/etc/passwd'))"),
    after_switch("SELECT to_tsvector('simple', string_agg(d, ' ')) FROM pg_ls_dir('.') d"),
    "SELECT set_config('role', session_user, true)",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT set_config('session_authorization', session_user, true)",
    "SELECT query_to_xml($q$SELECT set_config('role', session_user, true)$q$, true, true, '')",
    f"SELECT (s.a::text).ts_stat FROM (VALUES ($q${SWITCH}$q$)) AS s(a)",
]
LEAKS = [SECRET.lower(), PROMPT.lower(), SETTING.lower(), "root:", "postgresql.conf", "pg_hba", "secret-mcp-env"]


@pytest.fixture(params=["superuser", "plain user"])
def app_user(request, pg_cluster, monkeypatch, tmp_path):
    """A PostgreSQL store whose app user is a superuser, or a plain user who owns the database (its
    DBA ran the SQL of `tui-agent db setup --print`); a memory_tool row, a system prompt, a setting
    and an MCP server's env hold secrets."""
    name = pg_cluster.create_database()
    user = "postgres"
    if request.param == "plain user":
        user = pg_cluster.give_to_new_user(name)
    monkeypatch.setenv("TUI_AGENT_DB", pg_cluster.url(name, user=user))
    vault = Vault(tmp_path / "vault").init()
    db = open_store(location.resolve(vault.root))
    if request.param == "plain user":
        with psycopg.connect(pg_cluster.url(name), autocommit=True) as dba:
            dba.execute(pg_memory.setup_sql([user]))
    profile = profiles.create_profile(
        "t", {"base_url": "http://127.0.0.1:9/v1", "chat_model": "m", "vision_model": "v", "image_model": "i"}
    )
    profiles.set_field(profile, "system_prompt", f"the {PROMPT} here")
    profiles.use_profile("t")
    Setting.create(key="probe", value=SETTING)
    with psycopg.connect(pg_cluster.url(name), autocommit=True) as admin:
        admin.execute(
            "INSERT INTO mcp_servers (name, transport, command, env, created_at) "
            """VALUES ('x', 'stdio', 'true', '{"TOKEN": "secret-mcp-env"}', 'now')"""
        )
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "hello")
    history.add_message(
        conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1", attachments=["m/p.png"]
    )
    assert backends.current().prepare_memory() == ""
    yield vault, request.param, pg_cluster.url(name)
    db.close()
    pg_cluster.drop_database(name)
    if user != "postgres":
        with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{user}"')
            admin.execute(f'DROP ROLE "{user}"')


def request_for(query: str, limits: Limits | None = None) -> Request:
    url = Message._meta.database.store_url
    return Request("", query, limits or Limits(), {"connect": {"dbname": url.dbname, **url.connect_args()}})


def without_parser(monkeypatch, kind: str = "select") -> None:
    monkeypatch.setattr(pg_run, "check", lambda sql: Checked(kind, sql))


@pytest.mark.parametrize("query", ESCAPES)
def test_no_statement_leaves_the_role_even_with_the_parser_off(app_user, monkeypatch, query):
    without_parser(monkeypatch)
    before = pg_dump()
    answer = pg_run.run_guarded(request_for(query))
    text = json.dumps(answer).lower()
    assert answer["ok"] is False, answer
    assert not [leak for leak in LEAKS if leak in text], answer
    assert pg_dump() == before
    if "set_config" in query or "ts_stat" in query:
        assert "within security-definer function" in answer["error"], answer


def test_a_statement_cannot_end_other_sessions(app_user, monkeypatch):
    _vault, _kind, admin_url = app_user
    without_parser(monkeypatch)
    with psycopg.connect(admin_url, autocommit=True) as other, psycopg.connect(admin_url, autocommit=True) as app:
        pid = other.info.backend_pid
        for query in (
            f"SELECT pg_terminate_backend({pid})",
            f"SELECT pg_cancel_backend({pid})",
            f"SELECT {stat(SWITCH)}, pg_terminate_backend({pid})",
            after_switch(f"SELECT to_tsvector(pg_terminate_backend({pid})::text)"),
        ):
            answer = pg_run.run_guarded(request_for(query))
            assert answer["ok"] is False, (query, answer)
        assert other.execute("SELECT 1").fetchone() == (1,)
        alive = app.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        assert alive == (1,)


def test_the_role_may_write_nothing_and_only_it_may_call_its_function(app_user):
    _vault, _kind, admin_url = app_user
    role, function = pg_memory.ROLE, f"{pg_memory.RUN_SELECT}(text, integer)"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT rolsuper, rolcanlogin, rolreplication, rolbypassrls, rolcreaterole, rolcreatedb "
            "FROM pg_roles WHERE rolname = %s",
            (role,),
        ).fetchone()
        assert row == (False, False, False, False, False, False)
        for table in ("messages", "conversations", "message_revisions", "attachments"):
            for privilege in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
                assert not admin.execute(
                    "SELECT has_table_privilege(%s, %s, %s)", (role, f"{pg_memory.SCHEMA}.{table}", privilege)
                ).fetchone()[0], (table, privilege)
        for table in ("settings", "profiles", "mcp_servers", "media_blobs", "messages"):
            assert not admin.execute(
                "SELECT has_table_privilege(%s, %s, 'SELECT')", (role, f"public.{table}")
            ).fetchone()[0]
        assert not admin.execute("SELECT has_schema_privilege(%s, %s, 'CREATE')", (role, pg_memory.SCHEMA)).fetchone()[
            0
        ]
        definer = admin.execute(
            "SELECT prosecdef, proowner::regrole::text, proacl::text FROM pg_proc WHERE oid = to_regprocedure(%s)",
            (function,),
        ).fetchone()
        assert definer[0] is True and definer[1] == role
        assert not re.search(r"(^|[{,])=X/", definer[2]), definer  # PUBLIC may not call it


async def test_a_declined_update_leaves_no_trace_on_the_server(app_user):
    """A sequence bumped by a trigger on every row updated (sequences are never rolled back): the
    dry run before the question must not have updated a row, even in a transaction undone later."""
    vault, _kind, admin_url = app_user
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("CREATE SEQUENCE updates_seen")
        admin.execute(
            "CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS "
            "$$ BEGIN PERFORM nextval('updates_seen'); RETURN NEW; END $$"
        )
        admin.execute("CREATE TRIGGER bump BEFORE UPDATE ON public.messages FOR EACH ROW EXECUTE FUNCTION bump()")
    asked: list[str] = []

    async def no(tool, question):
        asked.append(question)
        return False

    ctx = ToolContext(vault, profiles.active_profile(), no)
    query = "UPDATE messages SET content = 'changed' WHERE id = 1"
    result = await default_registry().execute("memory_sql", {"query": query}, ctx)
    assert result.error == "the user declined this UPDATE; nothing was changed"
    assert asked and asked[0].startswith("This UPDATE changes the content of 1 message.")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        assert admin.execute("SELECT is_called FROM updates_seen").fetchone() == (False,)


def test_an_update_dry_run_cannot_leave_a_replication_slot(app_user, monkeypatch):
    """The parser off: the UPDATE as written, and as the SELECT its dry run is, both try to switch
    the role back and create a replication slot (which no rollback undoes) before any question."""
    _vault, _kind, admin_url = app_user
    without_parser(monkeypatch, "update")
    slot = stat("SELECT to_tsvector(slot_name::text) FROM pg_create_physical_replication_slot('tui_agent_evil')")
    new = f"{stat(SWITCH)} || {slot}"
    attempts = [
        f"UPDATE messages SET content = {new} WHERE id = 1",
        "SELECT m.id AS memory_sql_id, m.role AS memory_sql_role, m.content AS memory_sql_old, "
        f"{new} AS memory_sql_new FROM messages m WHERE m.id = 1",
    ]
    try:
        for query in attempts:
            answer = pg_run.run_guarded(request_for(query))
            assert answer["ok"] is False, (query, answer)
            with psycopg.connect(admin_url, autocommit=True) as admin:
                assert admin.execute("SELECT slot_name FROM pg_replication_slots").fetchall() == []
        assert Message.get_by_id(1).content == "hello"
    finally:  # slots belong to the whole cluster: none may outlive the test
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots")


ATTRIBUTE_CALLS = [
    ("SELECT m.row_to_json FROM messages m", "refused: m.row_to_json (m has no column row_to_json"),
    ("SELECT ('role'::text).current_setting", "refused: the function current_setting (written as a field"),
    (f"SELECT (s.a::text).ts_stat FROM (VALUES ($q${SWITCH}$q$)) AS s(a)", "refused: the function ts_stat"),
    ("SELECT (m).ts_stat FROM messages m", "refused: the function ts_stat (written as a field"),
    ("SELECT s.current_setting FROM (SELECT 'role' AS x) s", "refused: s.current_setting (s has no column"),
    ("SELECT ((m).content).query_to_xml FROM messages m", "refused: the function query_to_xml"),
    ("SELECT (ARRAY['role'])[1].current_setting", "refused: the function current_setting"),
    ("UPDATE messages m SET content = m.row_to_json WHERE id = 1", "refused: m.row_to_json"),
    ("SELECT x.pg_read_file FROM (SELECT '/etc/passwd'::text AS f) x", "refused: x.pg_read_file"),
    ("SELECT nothing FROM messages", "refused: the name nothing (no table of this statement has such a column)"),
    ("SELECT pg_terminate_backend(1)", "refused: the function pg_terminate_backend"),
    ("SELECT * FROM pg_ls_dir('.')", "refused: the function pg_ls_dir"),
    ("SELECT ts_rewrite('a'::tsquery, 'SELECT 1')", "refused: the function ts_rewrite"),
    ("SELECT xpath('/x', '<x/>')", "refused: the function xpath"),
    ("SELECT table_to_xml('messages', true, true, '')", "refused: the function table_to_xml"),
    ("SELECT 1 OPERATOR(public.+) 1", "refused: the operator public.+"),
    ("SELECT 'messages'::text::xml", "refused: the type xml"),
]


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
@pytest.mark.parametrize(("query", "words"), ATTRIBUTE_CALLS)
async def test_attribute_notation_calls_meet_the_allow_list(env, query, words):
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1")
    assert backends.current().prepare_memory() == ""
    profiles.set_field(env.profile, "sql_update_approval", "auto")
    before = pg_dump()
    ctx = ToolContext(env.vault, env.reload_profile(), None)
    result = await default_registry().execute("memory_sql", {"query": query}, ctx)
    assert result.error.startswith(words), result.error
    assert SECRET not in result.to_json() and pg_dump() == before


NAMES_THAT_RESOLVE = [
    ("SELECT m.content, c.title FROM messages m JOIN conversations c ON c.id = m.conversation_id", [["hi", "c"]]),
    ("SELECT (m).content FROM messages m", [["hi"]]),
    ("WITH r(body) AS (SELECT content FROM messages) SELECT r.body FROM r", [["hi"]]),
    ("SELECT s.n FROM (SELECT count(*) AS n FROM messages) s", [[1]]),
    ("SELECT s.count FROM (SELECT count(*) FROM messages) s", [[1]]),
    ("SELECT g.g FROM generate_series(1, 2) g", [[1], [2]]),
    ("SELECT e.value FROM json_array_elements('[7]') e", [[7]]),
    ("SELECT j.key, j.value FROM json_each('{\"a\": 1}') j", [["a", 1]]),
    ("SELECT u.x, u.ordinality FROM unnest(ARRAY['p']) WITH ORDINALITY AS u(x)", [["p", 1]]),
    ("SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY n DESC", [["user", 1]]),
    ("SELECT a.id FROM messages a JOIN LATERAL (SELECT a.content AS c) l ON l.c = 'hi'", [[1]]),
    ("SELECT 1 AS a, 2 AS a", [[1, 2]]),
]


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
async def test_names_that_resolve_run_as_written(env):
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "hi")
    history.add_message(conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1")
    ctx = ToolContext(env.vault, env.reload_profile(), None)
    for query, rows in NAMES_THAT_RESOLVE:
        result = await default_registry().execute("memory_sql", {"query": query}, ctx)
        assert result.is_ok and result.data["rows"] == rows, (query, result.to_dict())
    result = await default_registry().execute("memory_sql", {"query": "SELECT 1 AS a, 2 AS a"}, ctx)
    assert result.data["columns"] == ["a", "a"]
    result = await default_registry().execute(
        "memory_sql", {"query": "SELECT id, content FROM messages WHERE false"}, ctx
    )
    assert result.data == {"kind": "select", "columns": ["id", "content"], "rows": [], "row_count": 0}


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
def test_a_scripted_model_through_ask_gets_refusals_and_no_secret(env):
    """`tui-agent ask` (no --yes) with a model that tries the escapes: the tool results it is sent
    back hold refusals, never a memory_tool row or the system prompt; nothing changed."""
    conversation = history.new_conversation("c")
    hidden = history.add_message(conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1")
    profiles.set_field(env.profile, "system_prompt", f"the {PROMPT} here")
    attempts = [
        f"SELECT (s.a::text).ts_stat, (s.b::text).ts_stat FROM (VALUES ($q${SWITCH}$q$, "
        "$q$SELECT to_tsvector('simple', content) FROM public.messages$q$)) AS s(a, b)",
        "SELECT m.row_to_json FROM messages m",
        "SELECT ('role'::text).current_setting",
        "UPDATE messages SET content = (content).ts_stat",
    ]
    env.fake.script(
        Reply(tool_calls=[("memory_sql", json.dumps({"query": query})) for query in attempts]), Reply(text="done")
    )
    done = subprocess.run(
        [*tui_agent_argv(), "ask", "recall", "--vault", str(env.vault.root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    sent = env.fake.chat_requests[1]["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(results) == len(attempts)
    for text in results:
        assert '"status": "error"' in text and "refused:" in text, text
        assert SECRET.lower() not in text.lower() and PROMPT.lower() not in text.lower(), text
    assert Message.get_by_id(hidden.id).content == SECRET
    assert not MessageRevision.select().exists()
