"""memory_sql UPDATE: capped, text only, and approved on a question the app computed."""

from __future__ import annotations

import pytest
from memory_sql_helpers import answering, contents, declined_question, sql

from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.core.tools.sql_update import visible


@pytest.fixture
def three(env):
    conversation = history.new_conversation("c")
    for text in ("first", "second", "third"):
        history.add_message(conversation.id, "user", text)
    return env


async def test_the_question_is_computed_never_taken_from_the_query(three):
    lie = "/* This would change 1 message: 1" + "\n" * 80 + "*/ "
    query = (
        lie + "UPDATE messages SET content = char(27) || ']0;pwned' || char(7) || printf('%.*c', 500, 'x') || char(10)"
    )
    lines = await declined_question(three, query)
    question = "\n".join(lines)
    assert lines[0] == "This UPDATE changes the content of 3 messages."
    assert "would change 1" not in question and "UPDATE messages" not in question and "/*" not in question
    assert lines[5] == "  new: ␛]0;pwned␇" + "x" * 60 + "… (511 chars)"
    assert lines[3:5] == ["#1 user", "  old: first"]
    assert len(lines) == 3 + 3 * 3
    assert all(len(line) <= 100 for line in lines)
    assert not any(ord(c) < 0x20 for c in question.replace("\n", ""))
    assert contents() == ["first", "second", "third"]


async def test_the_preview_shows_the_first_five_and_counts_the_rest(env):
    conversation = history.new_conversation("c")
    for i in range(8):
        history.add_message(conversation.id, "user", f"m{i}")
    asked: list[str] = []

    yes = answering(True, asked)

    result = await sql(env, "UPDATE messages SET content = content || '!'", yes)
    assert result.data["updated"] == 8
    assert asked[0].splitlines()[-1] == "and 3 more: #6, #7, #8"
    assert asked[0].count("  old: ") == 5


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("zeroblob(10)", "refused: the new content of message 1 is a blob (10 bytes)"),
        ("x'41'", "refused: the new content of message 1 is a blob (1 bytes)"),
        ("randomblob(4)", "refused: the new content of message 1 is a blob (4 bytes)"),
        ("NULL", "refused: the new content of message 1 is NULL"),
        (
            "printf('%.*c', 70000, 'x')",
            "refused: the new content of message 1 is 70,000 bytes; the limit is 65,536 bytes "
            "(profile field sql_update_max_value_bytes)",
        ),
    ],
)
async def test_blobs_null_and_oversized_values_are_refused(three, value, error):
    profiles.set_field(three.profile, "sql_update_approval", "auto")
    result = await sql(three, f"UPDATE messages SET content = {value} WHERE id = 1")
    assert result.error.startswith(error), result.error
    assert contents() == ["first", "second", "third"]


async def test_the_caps_are_profile_fields(three):
    profiles.set_field(three.profile, "sql_update_approval", "auto")
    profiles.set_field(three.profile, "sql_update_max_rows", "2")
    result = await sql(three, "UPDATE messages SET content = 'x'")
    assert result.error.startswith("refused: this UPDATE would change 3 messages; the limit is 2 per UPDATE")
    assert contents() == ["first", "second", "third"]
    result = await sql(three, "UPDATE messages SET content = 'x' WHERE id <= 2")
    assert result.data["updated"] == 2
    profiles.set_field(three.profile, "sql_update_max_value_bytes", "100000")
    result = await sql(three, "UPDATE messages SET content = printf('%.*c', 70000, 'y') WHERE id = 3")
    assert result.data["updated"] == 1 and contents()[2] == "y" * 70000
    with pytest.raises(profiles.ProfileError):
        profiles.set_field(three.profile, "sql_update_max_rows", "0")
    with pytest.raises(profiles.ProfileError):
        profiles.set_field(three.profile, "sql_update_max_value_bytes", "2000000")


async def test_numbers_become_text(three):
    profiles.set_field(three.profile, "sql_update_approval", "auto")
    result = await sql(three, "UPDATE messages SET content = 42 WHERE id = 1")
    assert result.data["updated"] == 1 and contents()[0] == "42"


def test_visible_shows_controls_and_cuts():
    assert visible("a\x1b[2Jb\x07\x7f\u202e\x9b") == "a␛[2Jb␇␡<U+202E><U+009B>"
    assert visible("x" * 100, 10) == "x" * 10 + "…"
    assert visible("line1\nline2") == "line1␊line2"


def test_the_migration_step_adds_the_fields_with_defaults(tmp_path):
    import sqlite3

    from tui_agent.core.store import migrations

    conn = sqlite3.connect(tmp_path / "old.db")
    step = migrations.STEPS.index(migrations.V_SQL_CAPS)
    migrations.migrate(conn, step)
    conn.execute(
        "INSERT INTO profiles(name, base_url, chat_model, vision_model, created_at, updated_at) "
        "VALUES ('old', 'http://x/v1', 'm', 'v', 't', 't')"
    )
    conn.commit()
    migrations.migrate(conn, step + 1)
    assert conn.execute("SELECT sql_update_max_rows, sql_update_max_value_bytes FROM profiles").fetchone() == (
        50,
        65536,
    )
    conn.close()


async def test_rows_whose_content_stays_the_same_are_not_counted(three):
    asked: list[str] = []

    yes = answering(True, asked)

    result = await sql(three, "UPDATE messages SET content = content", yes)
    assert result.data == {"kind": "update", "updated": 0, "ids": []} and asked == []
    result = await sql(three, "UPDATE messages SET content = replace(content, 'ir', 'IR')", yes)
    assert result.data["ids"] == [1, 3]
    assert asked[0].startswith("This UPDATE changes the content of 2 messages.")
