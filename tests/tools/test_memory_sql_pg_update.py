"""memory_sql UPDATE on PostgreSQL: the same approval flow as on SQLite (count, old -> new, caps,
text only), the values computed by the server inside a transaction that is rolled back; the app
writes the approved ones with revisions. (tests/tools/test_memory_sql_update.py is SQLite's; its
statements use SQLite's functions.)"""

from __future__ import annotations

import pytest
from memory_sql_helpers import answering, contents, declined_question, sql

from tui_agent.core import profiles
from tui_agent.core.store import backends, history
from tui_agent.core.store.models import Message, MessageRevision
from tui_agent.core.tools import memory_sql, sql_worker
from tui_agent.core.tools.sql_run import Limits, Request

pytestmark = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)


@pytest.fixture(autouse=True)
def time_enough(monkeypatch):
    """These tests check what an UPDATE computes, not how fast: the 3 s statement limit is the
    tool's guard against runaway queries (tests/test_memory_sql_pg.py tests it), and a loaded
    machine could hit it here (issue 38 item 2). A limit of their own, far from any machine's speed."""
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 120.0)


@pytest.fixture
def three(env):
    conversation = history.new_conversation("c")
    for text in ("first", "second", "third"):
        history.add_message(conversation.id, "user", text)
    history.add_message(conversation.id, "memory_tool", "hidden", tool_name="memory_sql", tool_call_id="c1")
    return env


async def test_the_question_is_computed_never_taken_from_the_query(three):
    lie = "/* This would change 1 message: 1" + "\n" * 80 + "*/ "
    query = lie + "UPDATE messages SET content = chr(27) || ']0;pwned' || chr(7) || repeat('x', 500) || chr(10)"
    lines = await declined_question(three, query)
    question = "\n".join(lines)
    assert lines[0] == "This UPDATE changes the content of 3 messages."
    assert "would change 1" not in question and "UPDATE messages" not in question and "/*" not in question
    assert lines[3:5] == ["#1 user", "  old: first"]
    assert lines[5] == "  new: ␛]0;pwned␇" + "x" * 60 + "… (511 chars)"
    assert len(lines) == 3 + 3 * 3
    assert not any(ord(c) < 0x20 for c in question.replace("\n", ""))
    assert contents() == ["first", "second", "third", "hidden"]


async def test_approved_updates_are_written_with_revisions_and_never_touch_memory_rows(three):
    yes = answering(True)

    result = await sql(three, "UPDATE messages SET content = content || '!'", yes)
    assert result.data == {"kind": "update", "updated": 3, "ids": [1, 2, 3], "revisions_kept": 3}
    assert contents() == ["first!", "second!", "third!", "hidden"]
    assert [r.content for r in MessageRevision.select().order_by(MessageRevision.id)] == ["first", "second", "third"]
    result = await sql(three, "UPDATE messages SET content = 'x' WHERE role = 'memory_tool'", yes)
    assert result.data == {"kind": "update", "updated": 0, "ids": []}


async def test_caps_null_numbers_and_unchanged_rows(three):
    profiles.set_field(three.profile, "sql_update_approval", "auto")
    profiles.set_field(three.profile, "sql_update_max_rows", "2")
    result = await sql(three, "UPDATE messages SET content = 'x'")
    assert result.error.startswith("refused: this UPDATE would change 3 messages; the limit is 2 per UPDATE")
    result = await sql(three, "UPDATE messages SET content = repeat('y', 70000) WHERE id = 2")
    assert result.error == (
        "refused: the new content of message 2 is 70,000 bytes; the limit is 65,536 bytes "
        "(profile field sql_update_max_value_bytes)"
    )
    result = await sql(three, "UPDATE messages SET content = NULL WHERE id = 1")
    assert result.error.startswith("refused: the new content of a message would be NULL")
    assert contents() == ["first", "second", "third", "hidden"]
    result = await sql(three, "UPDATE messages SET content = 42 WHERE id = 1")
    assert result.data["updated"] == 1 and contents()[0] == "42"
    result = await sql(three, "UPDATE messages SET content = content")
    assert result.data == {"kind": "update", "updated": 0, "ids": []}
    result = await sql(three, "UPDATE messages SET content = replace(content, 'ir', 'IR') WHERE id > 1")
    assert result.data["ids"] == [3] and contents()[2] == "thIRd"


async def test_a_big_update_is_counted_but_its_values_stay_on_the_server(env):
    conversation = history.new_conversation("many")
    with Message._meta.database.atomic():
        for i in range(300):
            history.add_message(conversation.id, "user", f"message {i}")
    runner = backends.current().memory_runner()  # as memory_sql asks: the store readies the request
    query = "UPDATE messages SET content = repeat('x', 60000)"
    request = Request(
        "", query, Limits(time_limit_s=memory_sql.TIME_LIMIT_S), runner=runner.module, preload=runner.preload
    )
    assert runner.prepare(request) == ""
    answer = await sql_worker.run_in_worker(request, memory_sql.temp_dir(env.vault))
    assert answer["ok"] and answer["count"] == 300 and answer["updates"] == [] and len(answer["ids"]) == 50
    assert len(answer["preview"]) == 5 and answer["preview"][0][4] == "x" * 200
    assert Message.get_by_id(1).content == "message 0"


async def test_an_update_joining_other_tables_or_with_its_own_ctes(three):
    profiles.set_field(three.profile, "sql_update_approval", "auto")
    query = "UPDATE messages m SET content = c.title || ':' || m.content FROM conversations c WHERE c.id = m.conversation_id AND m.id = 1"
    result = await sql(three, query)
    assert result.data["ids"] == [1], result.to_dict()
    query = "WITH r AS (SELECT id FROM messages WHERE content = 'second') UPDATE messages SET content = 'two' FROM r WHERE messages.id = r.id"
    result = await sql(three, query)
    assert result.data["ids"] == [2], result.to_dict()
    assert contents() == ["c:first", "two", "third", "hidden"]
