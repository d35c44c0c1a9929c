"""A running app stops writing once another machine upgraded the shared store's schema past what
this tui-agent knows (issue 34 item 6), and only then: the upgrade is announced by the migration,
and the announcement is checked against the database (any role can NOTIFY)."""

from __future__ import annotations

import json
import time

import pytest

from tui_agent.core.store import history, location, pg_migrations, schema_guard
from tui_agent.core.store.db import open_store
from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.models import Message
from tui_agent.core.store.pg_listen import CHANNEL, Change, Listener


@pytest.fixture(autouse=True)
def _as_at_start():
    schema_guard.forget()
    yield
    schema_guard.forget()


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def connect(url: str):
    import psycopg

    parsed = location.parse(url)
    return psycopg.connect(autocommit=True, dbname=parsed.dbname, **parsed.connect_args())


def test_the_migration_announces_the_version_it_made(pg_url):
    with connect(pg_url) as listening:
        listening.execute(f"LISTEN {CHANNEL}")
        db = open_store(location.parse(pg_url))  # a new database: every step runs
        try:
            seen: list[dict] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and {"kind": "schema", "version": pg_migrations.LATEST} not in seen:
                seen += [json.loads(note.payload) for note in listening.notifies(timeout=0.25)]
            assert {"kind": "schema", "version": pg_migrations.LATEST} in seen
        finally:
            db.close()


def test_a_newer_schema_elsewhere_stops_the_writes_and_a_bare_announcement_does_not(pg_url):
    db = open_store(location.parse(pg_url))
    got: list[Change] = []
    listener = Listener(location.parse(pg_url), got.append).start()
    try:
        conversation = history.new_conversation()
        history.add_message(conversation.id, "user", "before")
        wait_for(listener.connected.is_set, "the listener listens")
        with connect(pg_url) as other:
            # Anyone may announce a schema; the database says otherwise: nothing changes here.
            other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({"kind": "schema", "version": 999})))
            other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({"conversation": 1, "kind": "update"})))
            wait_for(lambda: any(c.kind == "update" for c in got), "the change after the announcement")
            assert schema_guard.refusal() is None
            history.add_message(conversation.id, "user", "still written")

            # A newer tui-agent upgrades the schema on another machine (its migration's last writes).
            with other.transaction():
                other.execute("UPDATE tui_agent_schema SET version = %s", (pg_migrations.LATEST + 1,))
                announce = json.dumps({"kind": "schema", "version": pg_migrations.LATEST + 1})
                other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, announce))
            wait_for(lambda: schema_guard.refusal() is not None, "this app told the schema is newer")

            with pytest.raises(StoreError) as refused:
                history.add_message(conversation.id, "user", "after the upgrade")
            assert str(refused.value).startswith(
                f"the shared store was upgraded to schema version {pg_migrations.LATEST + 1} by a newer tui-agent"
            )
            assert "\n" not in str(refused.value)  # one line
            contents = [m.content for m in Message.select().order_by(Message.id)]  # reads go on
            assert contents == ["before", "still written"]
            written = other.execute("SELECT count(*) FROM messages WHERE content = 'after the upgrade'").fetchone()
            assert written == (0,)
    finally:
        listener.stop()
        db.close()
