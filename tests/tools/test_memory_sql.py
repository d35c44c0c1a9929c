"""memory_sql against hostile SQL: every refusal leaves the database byte-for-byte unchanged.

The corpus runs on both stores (BOTH_BACKENDS): on PostgreSQL each statement gets the same
refusal or PostgreSQL's own (its parser, its server); tests/tools/test_memory_sql_pg.py adds attacks
only PostgreSQL has.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from memory_sql_helpers import answering, is_postgresql, pg_dump, sql

from tui_agent.core import profiles
from tui_agent.core.store import backends, history
from tui_agent.core.store.models import Message, MessageRevision
from tui_agent.core.tools import memory_sql

SECRET = "SECRET-MEMORY-ROW"


@pytest.fixture
def mem(env, store_backend):
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "What is a 1T parameter model?", attachments=["pics/cat.png"])
    history.add_message(conversation.id, "assistant", "A model with a trillion parameters.")
    hidden = history.add_message(
        conversation.id,
        "memory_tool",
        f'{{"rows": "{SECRET}"}}',
        tool_name="memory_sql",
        tool_call_id="c1",
        attachments=[f"pics/{SECRET}.png"],
    )
    history.add_message(conversation.id, "web_tool", "search results", tool_name="web_search", tool_call_id="c2")
    MessageRevision.create(message=hidden.id, content=f"old {SECRET}", reason="test")
    MessageRevision.create(message=1, content="an older question", reason="test")
    if is_postgresql():  # memory_sql's role and views, once: set up by its first call otherwise
        assert backends.current().prepare_memory() == ""
    checkpoint()
    return env


def checkpoint() -> None:
    if not is_postgresql():
        Message._meta.database.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")


def fingerprint(env) -> tuple[str, str, list[str]]:
    if is_postgresql():
        return "-", "-", pg_dump()

    def digest(path):
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"

    db = env.vault.db_path
    wal = db.with_name(db.name + "-wal")
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    dump = list(conn.iterdump())
    conn.close()
    return digest(db), digest(wal), dump


INSERT = "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'x', 'now')"
HOSTILE = [
    INSERT,
    INSERT.lower(),
    "DELETE FROM messages",
    "delete from messages where id = 1",
    "DeLeTe FrOm MeSsAgEs",
    "/* harmless? */ DELETE FROM messages",
    "-- comment\nDELETE FROM messages",
    "DROP TABLE messages",
    "DROP TABLE IF EXISTS conversations",
    "DROP VIEW messages",
    "DROP TRIGGER memory_collect_update",
    "TRUNCATE messages",
    "TRUNCATE TABLE messages",
    "ALTER TABLE messages ADD COLUMN evil TEXT",
    "ALTER TABLE messages RENAME TO gone",
    "CREATE TABLE evil(x)",
    "CREATE TEMP TABLE evil(x)",
    "CREATE VIEW v AS SELECT * FROM main.messages",
    "CREATE TEMP VIEW v AS SELECT * FROM main.messages",
    "CREATE TRIGGER t AFTER UPDATE ON messages BEGIN DELETE FROM messages; END",
    "CREATE TEMP TRIGGER t INSTEAD OF UPDATE ON messages BEGIN SELECT 1; END",
    "CREATE INDEX i ON messages(content)",
    "CREATE VIRTUAL TABLE x USING fts5(a)",
    "REPLACE INTO messages(id, conversation_id, role, content, created_at) VALUES (1, 1, 'user', 'x', 't')",
    "INSERT OR REPLACE INTO messages(id, conversation_id, role, content, created_at) VALUES (1, 1, 'user', 'x', 't')",
    INSERT.replace("VALUES", "VALUES") + " ON CONFLICT(id) DO UPDATE SET content = 'x'",
    INSERT + " RETURNING *",
    "DELETE FROM messages RETURNING *",
    "UPDATE messages SET role = 'x' RETURNING *",
    "PRAGMA writable_schema = 1",
    "PRAGMA writable_schema=ON",
    "pragma journal_mode = delete",
    "PRAGMA table_info(messages)",
    "PRAGMA user_version = 99",
    "PRAGMA main.user_version",
    "PRAGMA foreign_keys = OFF",
    "PRAGMA query_only = 0",
    "SELECT * FROM pragma_table_info('messages')",
    "VACUUM",
    "VACUUM INTO '/tmp/tui-agent-evil.db'",
    "ATTACH DATABASE '/tmp/tui-agent-evil.db' AS evil",
    "attach '/tmp/tui-agent-evil.db' as evil",
    "DETACH DATABASE main",
    "BEGIN",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "RELEASE s",
    "REINDEX",
    "ANALYZE",
    "EXPLAIN DELETE FROM messages",
    "SELECT load_extension('/tmp/evil.so')",
    "select LOAD_EXTENSION('x')",
    "SELECT 1; DELETE FROM messages",
    "SELECT 1; SELECT 2",
    "UPDATE messages SET content = 'x' WHERE id = 1; DROP TABLE messages",
    "WITH x AS (SELECT 1) DELETE FROM messages",
    "WITH x AS (SELECT 1) INSERT INTO messages(conversation_id, role, content, created_at) SELECT 1, 'user', 'x', 't'",
    "UPDATE messages SET role = 'user' WHERE role = 'assistant'",
    "UPDATE messages SET id = id + 1000",
    "UPDATE messages SET conversation_id = 2",
    "UPDATE messages SET created_at = '1970-01-01'",
    "UPDATE messages SET content = 'x', role = 'user'",
    "UPDATE main.messages SET content = 'pwned'",
    "UPDATE conversations SET title = 'x'",
    "UPDATE sqlite_master SET sql = 'x'",
    "INSERT INTO sqlite_master VALUES ('table', 'x', 'x', 0, 'CREATE TABLE x(a)')",
    "DELETE FROM sqlite_master",
    "UPDATE message_revisions SET content = 'x'",
    "SELECT * FROM main.messages",
    'SELECT * FROM "main"."messages"',
    "SELECT * FROM [main].[messages]",
    "SELECT * FROM main . messages WHERE role = 'memory_tool'",
    "UPDATE messages SET content = (SELECT group_concat(content) FROM main.messages WHERE role = 'memory_tool') WHERE id = 1",
    "SELECT * FROM messages_fts WHERE messages_fts MATCH 'SECRET'",
    "SELECT * FROM messages_fts_data",
    "SELECT * FROM profiles",
    "SELECT * FROM settings",
    "SELECT _memory_collect_update(1, 'pwned')",
    "SELECT _memory_collect_update(1, 'x', 'pwned')",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    "WITH RECURSIVE r(x) AS (SELECT 'a' UNION ALL SELECT x || x FROM r) SELECT length(x) FROM r",
    "SELECT randomblob(2000000000)",
    "SELECT zeroblob(2000000000)",
    "SELECT length(randomblob(1000000000))",
    "SELECT printf('%.*c', 900000, 'x') || printf('%.*c', 900000, 'y')",
    "SELECT replace(hex(zeroblob(400000)), '0', '0000000000')",
    "UPDATE messages SET content = randomblob(100000000) WHERE id = 1",
    "SELECT readfile('/etc/passwd')",
    "SELECT writefile('/tmp/tui-agent-evil', 'x')",
    "SELECT fts3_tokenizer('simple')",
    "",
    "   ",
    # CTEs that shadow protected names (any case or quoting, nested, inside EXISTS)
    "WITH messages AS (SELECT * FROM main.messages) SELECT content FROM messages",
    'WITH "Messages" AS (SELECT * FROM main.messages) SELECT content FROM messages',
    "WITH [MESSAGES] AS (SELECT * FROM main.messages) SELECT content FROM messages",
    "WITH `messages` AS (SELECT * FROM main.messages) SELECT content FROM messages",
    "WITH messages(id, content) AS (SELECT id, content FROM main.messages) SELECT content FROM messages",
    "WITH messages AS MATERIALIZED (SELECT * FROM main.messages) SELECT content FROM messages",
    "WITH messages AS NOT MATERIALIZED (SELECT * FROM main.messages) SELECT content FROM messages",
    "WITH x AS (SELECT 1), messages AS (SELECT * FROM main.messages) SELECT content FROM messages",
    "WITH RECURSIVE messages(id) AS (SELECT 1) SELECT * FROM messages",
    "SELECT * FROM (WITH messages AS (SELECT * FROM main.messages) SELECT content FROM messages)",
    "SELECT EXISTS (WITH messages AS (SELECT * FROM main.messages) SELECT 1 FROM messages WHERE role = 'memory_tool')",
    "SELECT 1 WHERE EXISTS (WITH Messages AS (SELECT * FROM main.messages) SELECT 1 FROM messages "
    "WHERE content LIKE '%SECRET%')",
    "WITH conversations AS (SELECT content AS title FROM messages) SELECT * FROM conversations",
    "WITH sqlite_master AS (SELECT 1) SELECT * FROM sqlite_master",
    "WITH messages_fts AS (SELECT 1) SELECT * FROM messages_fts",
    "UPDATE messages SET content = (WITH messages AS (SELECT * FROM main.messages) "
    "SELECT group_concat(content) FROM messages) WHERE id = 1",
    # any reference to main.messages, also in UPDATE ... FROM and WHERE subqueries (copy or one bit per query)
    "UPDATE messages SET content = m.content FROM main.messages m WHERE m.role = 'memory_tool' AND messages.id = 1",
    "UPDATE messages SET content = m.content FROM (SELECT * FROM main.messages) m WHERE m.role = 'memory_tool'",
    "UPDATE messages SET content = 'x' WHERE id = 1 AND EXISTS "
    "(SELECT 1 FROM main.messages WHERE role = 'memory_tool' AND content LIKE '%SECRET%')",
    "UPDATE messages SET content = 'x' WHERE id IN (SELECT id - 2 FROM main.messages WHERE role = 'memory_tool')",
    "SELECT count(*) FROM messages WHERE EXISTS (SELECT 1 FROM main.messages WHERE role = 'memory_tool')",
    "SELECT (SELECT content FROM main.messages WHERE role = 'memory_tool')",
    'SELECT * FROM main."messages"',
    "SELECT * FROM MAIN.MESSAGES",
    "SELECT * FROM main/**/./**/messages",
    "SELECT * FROM `main`.`messages`",
    "WITH m AS (SELECT * FROM main.messages) SELECT * FROM m",
    "SELECT * FROM messages JOIN main.messages USING (id)",
]


@pytest.mark.slow
@BOTH_BACKENDS
@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_statements_are_refused_and_change_nothing(mem, query, monkeypatch):
    # The shipped limit, not the tests' own (tests/conftest.py): a runaway statement ends with an
    # error however slow the machine is, and the limit is what ends it.
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 3.0)
    profiles.set_field(mem.profile, "sql_update_approval", "auto")
    checkpoint()
    before = fingerprint(mem)
    # It ends (refused, or stopped by the tool's own limit): a hang fails here; its speed is not the test's.
    result = await asyncio.wait_for(sql(mem, query), 120)
    assert result.status == "error", (query, result.to_dict())
    assert result.error
    assert fingerprint(mem) == before
    assert SECRET not in result.to_json()
    assert not re.search(r"LIMIT_|TOOBIG|SQLITE_|Traceback", result.error), result.error


REFUSALS_IN_WORDS = [
    ("DROP TABLE messages", "refused: DROP TABLE (changing the database schema) is not allowed"),
    ("DROP VIEW messages", "refused: DROP VIEW (changing the database schema) is not allowed"),
    ("CREATE TABLE evil(x)", "refused: CREATE TABLE (changing the database schema) is not allowed"),
    (INSERT, "refused: INSERT INTO messages is not allowed"),
    ("DELETE FROM messages", "refused: DELETE FROM messages is not allowed"),
    ("PRAGMA user_version = 99", "refused: PRAGMA user_version = 99 is not allowed"),
    ("ATTACH DATABASE '/tmp/tui-agent-evil.db' AS evil", "refused: ATTACH (attaching databases) is not allowed"),
    ("BEGIN", "refused: a transaction statement (BEGIN) is not allowed"),
    ("SELECT * FROM profiles", "refused: reading profiles is not allowed"),
    ("SELECT load_extension('x')", "refused: the function load_extension is not allowed"),
    ("UPDATE messages SET role = 'x'", "refused: only messages.content may be updated"),
    ("SELECT * FROM main.messages", "refused: main.messages cannot be read"),
    ("WITH Messages AS (SELECT 1) SELECT 1", "refused: a WITH clause may not define a name that hides a table"),
]
#: Where PostgreSQL words it its own way (statements its grammar does not have, schemas it names otherwise).
PG_WORDS = {
    "CREATE TABLE evil(x)": "SQL error: PostgreSQL cannot parse this statement (syntax error",
    "PRAGMA user_version = 99": "SQL error: PostgreSQL cannot parse this statement (syntax error",
    "ATTACH DATABASE '/tmp/tui-agent-evil.db' AS evil": "SQL error: PostgreSQL cannot parse this statement",
    "SELECT * FROM main.messages": "refused: reading main.messages is not allowed",
}


@BOTH_BACKENDS
@pytest.mark.parametrize(("query", "words"), REFUSALS_IN_WORDS)
async def test_refusals_say_what_was_refused_in_words(mem, query, words):
    profiles.set_field(mem.profile, "sql_update_approval", "auto")
    result = await sql(mem, query)
    if is_postgresql():
        words = PG_WORDS.get(query, words)
    assert result.error.startswith(words), result.error


def test_corpus_is_large_enough():
    assert len(HOSTILE) >= 120


HIDING = [
    "SELECT * FROM messages",
    "SELECT content FROM messages WHERE role = 'memory_tool'",
    "SELECT * FROM temp.messages",
    "select * from MESSAGES where ROLE like 'MEMORY%'",
    "SELECT (SELECT group_concat(content) FROM messages)",
    "SELECT m.content FROM messages m JOIN messages n ON m.id = n.id",
    "WITH x AS (SELECT * FROM messages) SELECT * FROM x",
    "WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM r WHERE id < 10) SELECT m.content FROM r JOIN messages m USING (id)",
    "SELECT c.title, m.content FROM conversations c JOIN messages m ON m.conversation_id = c.id",
    "SELECT * FROM messages WHERE id IN (SELECT id FROM messages WHERE content LIKE '%SECRET%')",
    "SELECT count(*) FROM (SELECT id FROM messages)",
    "SELECT id FROM messages WHERE content LIKE '%main.messages%' OR content = 'WITH messages AS (x)'",
    "SELECT 1 AS \"main.messages\", 'with messages as' -- WITH messages AS (SELECT * FROM main.messages)",
    "WITH Recent(id, body) AS (SELECT id, content FROM messages), older AS (SELECT 1) SELECT * FROM Recent",
    "WITH recent AS (SELECT * FROM messages ORDER BY id DESC) SELECT count(*), group_concat(content) FROM recent",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5) SELECT count(*) FROM r",
]


#: SQLite's ``temp`` schema: PostgreSQL refuses any schema-qualified name.
PG_REFUSED_HIDING = {"SELECT * FROM temp.messages"}


@pytest.mark.slow
@BOTH_BACKENDS
@pytest.mark.parametrize("query", HIDING)
async def test_memory_tool_rows_are_never_returned(mem, query):
    result = await sql(mem, query)
    if is_postgresql() and query in PG_REFUSED_HIDING:
        assert result.error.startswith("refused: reading temp.messages is not allowed"), result.error
    else:
        assert result.is_ok, result.error
    assert SECRET not in result.to_json()


#: Every view memory_sql exposes, on both stores: the same rows, memory_sql's own and theirs hidden.
SAME_ROWS = [
    ("SELECT id, message_id, position, path, mime FROM attachments", [[1, 1, 0, "pics/cat.png", "image/png"]]),
    ("SELECT count(*) FROM attachments", [[1]]),
    ("SELECT a.path FROM attachments a JOIN messages m ON m.id = a.message_id", [["pics/cat.png"]]),
    ("SELECT message_id, content FROM message_revisions", [[1, "an older question"]]),
    ("SELECT count(*) FROM message_revisions WHERE content LIKE '%SECRET%'", [[0]]),
    ("SELECT id, role FROM messages ORDER BY id", [[1, "user"], [2, "assistant"], [4, "web_tool"]]),
    ("SELECT id, title FROM conversations", [[1, "c"]]),
]


@BOTH_BACKENDS
@pytest.mark.parametrize(("query", "rows"), SAME_ROWS)
async def test_every_view_hides_the_same_rows_on_both_stores(mem, query, rows):
    result = await sql(mem, query)
    assert result.is_ok and result.data["rows"] == rows, result.to_dict()
    assert SECRET not in result.to_json()


@BOTH_BACKENDS
@pytest.mark.parametrize("table", ["attachments", "message_revisions"])
async def test_the_hidden_tables_cannot_be_read_around_their_views(mem, table):
    for query in (
        f"SELECT * FROM main.{table}",
        f'SELECT * FROM "main"."{table}"',
        f"WITH {table} AS (SELECT 1) SELECT 1",
    ):
        result = await sql(mem, query)
        assert result.error.startswith("refused:"), (query, result.error)
        assert SECRET not in result.to_json()


@BOTH_BACKENDS
async def test_seed_example_query_works_as_written(mem):
    query = """SELECT id, content
FROM messages
WHERE content LIKE '%1T parameter%'
  AND role != 'memory_tool'
ORDER BY id DESC
LIMIT 5;"""
    result = await sql(mem, query)
    assert result.data == {
        "kind": "select",
        "columns": ["id", "content"],
        "rows": [[1, "What is a 1T parameter model?"]],
        "row_count": 1,
    }


@BOTH_BACKENDS
async def test_update_keeps_revisions_never_touches_memory_rows_and_can_be_restored(mem, tmp_path, monkeypatch):
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 120.0)  # what it writes, not how fast (issue 38 item 2)
    profiles.set_field(mem.profile, "sql_update_approval", "auto")
    result = await sql(mem, "UPDATE messages SET content = upper(content) || ' [edited]'")
    assert result.data["ids"] == [1, 2, 4]
    stored = {m.id: m.content for m in Message.select()}
    assert stored[1] == "WHAT IS A 1T PARAMETER MODEL? [edited]"
    assert SECRET in stored[3]
    result = await sql(mem, "UPDATE messages SET content = 'x' WHERE role = 'memory_tool'")
    assert result.data == {"kind": "update", "updated": 0, "ids": []}
    if not is_postgresql():  # history search on PostgreSQL is issue 27 item 1, not this tool's
        assert history.search_messages("edited")
    listing = subprocess.run(
        [*tui_agent_argv(), "history", "revisions", "--vault", str(mem.vault.root)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "message 1" in listing and "What is a 1T parameter model?" in listing
    revision_id = history.list_revisions(1)[0].id
    subprocess.run(
        [*tui_agent_argv(), "history", "restore", str(revision_id), "--vault", str(mem.vault.root)],
        check=True,
        capture_output=True,
    )
    assert Message.get_by_id(1).content == "What is a 1T parameter model?"


@BOTH_BACKENDS
async def test_update_waits_for_approval(mem):
    before = fingerprint(mem)
    result = await sql(mem, "UPDATE messages SET content = 'x' WHERE id = 1")
    assert "needs the user's approval" in result.error
    asked: list[str] = []

    no = answering(False, asked)

    result = await sql(mem, "UPDATE messages SET content = 'x' WHERE id = 1", no)
    assert result.error == "the user declined this UPDATE; nothing was changed"
    assert asked == [
        "This UPDATE changes the content of 1 message.\n"
        "Each previous text is kept as a revision (tui-agent history restore ID).\n\n"
        "#1 user\n  old: What is a 1T parameter model?\n  new: x"
    ]
    assert fingerprint(mem)[2] == before[2]

    yes = answering(True)

    result = await sql(mem, "UPDATE messages SET content = 'x' WHERE id = 1", yes)
    assert result.data["updated"] == 1 and Message.get_by_id(1).content == "x"


@BOTH_BACKENDS
async def test_row_and_output_limits_are_reported(mem):
    conversation = history.new_conversation()
    for i in range(250):
        history.add_message(conversation.id, "user", f"row {i} " + "y" * 200)
    result = await sql(mem, "SELECT id FROM messages")
    assert result.data["row_count"] == 200 and "row limit reached" in result.data["truncated"]
    result = await sql(mem, "SELECT content FROM messages")
    assert "output limit reached" in result.data["truncated"]
    assert len(json.dumps(result.data["rows"])) <= 33_000
    result = await sql(mem, "SELECT id FROM messages LIMIT 3")
    assert "truncated" not in result.data
