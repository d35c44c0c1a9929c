"""Connections are counted (issue 35, item 5): an app holds at most two to a PostgreSQL server
(the store's thread, the listener), and lets the store's go when it has been idle."""

from __future__ import annotations

import pytest
from pilot_helpers import make, until

from tui_agent.core.store import history, worker
from tui_agent.core.store.models import Message
from tui_agent.core.store.pg import application_name

ON_POSTGRESQL = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)


def connections() -> int:
    """This process's connections to its database, as the server counts them (read apart)."""
    import psycopg

    url = Message._meta.database.store_url
    with psycopg.connect(dbname=url.dbname, autocommit=True, **url.connect_args()) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name LIKE %s",
            (url.dbname, application_name() + "%"),
        ).fetchone()
    return int(row[0]) if row else 0


@ON_POSTGRESQL
async def test_an_app_holds_two_connections_and_lets_the_store_one_go_when_idle(env, monkeypatch):
    conversation = history.new_conversation("counted")
    history.add_message(conversation.id, "user", "hello")
    monkeypatch.setattr(worker, "IDLE_RELEASE_S", 3600.0)
    app = make(env.vault)
    worker.release_this_thread()  # as run.py does before app.run(): the test's own is not the app's
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.live_updates is not None and app.live_updates.listener.connected.is_set())
        await pilot.press("ctrl+b")  # more reads (the sidebar): still the same connection
        await until(pilot, lambda: bool(app.query("#conversation-list")))
        assert connections() == 2  # the store's thread and the listener
        monkeypatch.setattr(worker, "IDLE_RELEASE_S", 0.3)
        await app.conversation_view.open_conversation(conversation.id)
        await until(pilot, lambda: connections() == 1)  # idle: only the listener stays
        await app.conversation_view.open_conversation(None)
        await app.conversation_view.open_conversation(conversation.id)  # and it comes back when needed
        assert app.conversation_view.title() == "counted"
