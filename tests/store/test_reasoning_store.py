"""The reasoning column (its own migration step) and the optional temperature field."""

from __future__ import annotations

import sqlite3

from backends import BOTH_BACKENDS

from tui_agent.core import profiles
from tui_agent.core.store import history, migrations, open_database
from tui_agent.core.store.models import Message, Profile


def test_reasoning_step_upgrades_an_old_database_keeping_its_messages(tmp_path):
    path = tmp_path / "old.db"
    step = migrations.STEPS.index(migrations.V_REASONING)
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrations.migrate(conn, target=step) == step
    conn.execute("INSERT INTO conversations(id, title, created_at, updated_at) VALUES (1, 't', 'x', 'x')")
    conn.execute(
        "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, 'assistant', 'old reply', 'x')"
    )
    columns = [row[1] for row in conn.execute("PRAGMA table_info(messages)")]
    assert "reasoning" not in columns
    assert migrations.migrate(conn) == migrations.LATEST
    assert conn.execute("SELECT content, reasoning FROM messages").fetchall() == [("old reply", None)]
    conn.close()
    db = open_database(path)
    try:
        message = history.add_message(1, "assistant", "answer", reasoning="because")
        assert Message.get_by_id(message.id).reasoning == "because"
        # Reasoning is not searchable as content: the answer's index never holds it.
        assert [hit[0] for hit in history.search_messages("because")] == []
        assert [hit[0] for hit in history.search_messages("answer")] == [message.id]
    finally:
        db.close()


@BOTH_BACKENDS
def test_empty_temperature_is_stored_as_nothing_and_shown_empty(env):
    profiles.set_field(env.profile, "temperature", "")
    profile = Profile.get_by_id(env.profile.id)
    assert profile.temperature is None
    assert profiles.field_as_text(profile, "temperature") == ""
    profiles.validate_profile(profile)
    profiles.set_field(profile, "temperature", "1")
    assert Profile.get_by_id(env.profile.id).temperature == 1.0
