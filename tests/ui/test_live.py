"""Live across machines on PostgreSQL (issue 27, item 5): two vault folders on one database, as two
machines are. What one stores shows on the other as it is stored (LISTEN/NOTIFY: the app never
polls, so without the push nothing would show; how fast is bench/live_latency.py's work), a reply running
on one shows as running on the other; the server going away mid-reply keeps the reply in the vault
and the app goes on by itself once it is back."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from cli_fork import ask_process
from fake_openai import Reply
from pilot_helpers import make, until

from tui_agent.core.store import history, location
from tui_agent.core.store.models import Message
from tui_agent.core.vault import Vault
from tui_agent.ui.app import AgentApp
from tui_agent.ui.live_updates import RUNNING_ELSEWHERE
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, UserBubble

ON_POSTGRESQL = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)


def texts(app: AgentApp, kind: type) -> list[str]:
    return [bubble.text.strip() for bubble in app.query_one("#chat-log").query(kind)]


def statuses(app: AgentApp) -> list[str]:
    return [bubble.status for bubble in app.query_one("#chat-log").query(AssistantBubble)]


def status_text(app: AgentApp) -> str:
    return str(app.query_one("#status").render())


def other_machine(tmp_path: Path) -> Path:
    """Another vault folder on the same database (``$TUI_AGENT_DB``, set by pg_url)."""
    return Vault(tmp_path / "machine-a").init().root


def shows_running_elsewhere(app: Any, message: str) -> bool:
    """The app shows ``message`` and its reply streaming, and says another machine runs that turn."""
    return message in texts(app, UserBubble) and "streaming" in statuses(app) and RUNNING_ELSEWHERE in status_text(app)


def streaming_row(conversation_id: int) -> Message | None:
    return (
        Message.select()
        .where(Message.conversation == conversation_id, Message.status == "streaming")
        .order_by(Message.id.desc())
        .first()
    )


@pytest.mark.slow
@ON_POSTGRESQL
async def test_what_another_machine_stores_shows_within_a_second_and_its_running_reply_shows_running(env, tmp_path):
    conversation = history.new_conversation("shared")
    history.add_message(conversation.id, "user", "before")
    history.add_message(conversation.id, "assistant", "earlier answer")
    released = threading.Event()
    env.fake.script(Reply(text="word " * 60, chunk_size=5, chunk_delay_s=0.01, hold=released, hold_after_chunks=4))
    app = make(env.vault)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.live_updates is not None and app.live_updates.listener.connected.is_set())
            shown_before = list(app.query_one("#chat-log").children)
            machine_a = ask_process(other_machine(tmp_path), "--conversation", str(conversation.id), "hello from A")
            # A's reply is running (its row stored as "streaming", held mid-stream): B shows it running.
            await until(pilot, lambda: streaming_row(conversation.id) is not None)
            await until(pilot, lambda: shows_running_elsewhere(app, "hello from A"))
            released.set()
            machine_a.wait(timeout=60)
            assert machine_a.returncode == 0, machine_a.stderr.read() if machine_a.stderr else ""
            await until(pilot, lambda: ("word " * 60).strip() in texts(app, AssistantBubble))
            # Its end comes with the stored row (read on the store's thread: a frame or two after the words).
            await until(pilot, lambda: statuses(app) == ["complete", "complete"])
            assert RUNNING_ELSEWHERE not in status_text(app)
            # Appended: what was on screen before is still there, not drawn again.
            assert all(widget.is_attached for widget in shown_before)
            assert texts(app, UserBubble) == ["before", "hello from A"]
            # A conversation begun on A shows in B's sidebar, the open one staying open.
            await pilot.press("ctrl+b")
            await until(pilot, lambda: bool(sidebar_titles(app)))
            assert sidebar_titles(app) == ["shared"]
            began = ask_process(other_machine(tmp_path), "--new", "a new topic")
            assert began.wait(timeout=60) == 0, began.stderr.read() if began.stderr else ""
            await until(pilot, lambda: sidebar_titles(app) == ["a new topic", "shared"])
            assert app.conversation_id == conversation.id
    finally:
        released.set()


def sidebar_titles(app: AgentApp) -> list[str]:
    return [str(label.render()) for label in app.query("#conversation-list Label")]


@pytest.mark.slow
@ON_POSTGRESQL
async def test_two_apps_one_database_a_sends_b_shows_it_and_its_running_reply(env, tmp_path):
    """Two apps (two vault folders, one database) in one test: A's message and its running reply show
    in B. Both run in this process, so B is told that A's writes are another machine's (one app per
    process is what tells them apart otherwise)."""
    conversation = history.new_conversation("shared")
    history.add_message(conversation.id, "user", "first")
    released = threading.Event()
    env.fake.script(Reply(text="the reply " * 30, chunk_size=5, chunk_delay_s=0.01, hold=released, hold_after_chunks=4))
    app_a, app_b = make(env.vault), make(Vault(tmp_path / "machine-b").init())
    try:
        async with app_a.run_test(size=(120, 40)) as pilot_a, app_b.run_test(size=(120, 40)) as pilot_b:
            await until(
                pilot_b, lambda: app_b.live_updates is not None and app_b.live_updates.listener.connected.is_set()
            )
            app_b.live_updates.origin = "machine B"
            assert app_a.conversation_id == app_b.conversation_id == conversation.id
            app_a.query_one("#composer").load_text("sent from A")
            await pilot_a.press("enter")
            await until(pilot_a, lambda: streaming_row(conversation.id) is not None)
            await until(pilot_b, lambda: shows_running_elsewhere(app_b, "sent from A"))
            released.set()
            await until(pilot_a, lambda: not app_a.turns)
            await until(pilot_b, lambda: ("the reply " * 30).strip() in texts(app_b, AssistantBubble))
            assert texts(app_b, UserBubble) == ["first", "sent from A"]
            assert texts(app_a, UserBubble) == ["first", "sent from A"]  # A drew its own turn once
            assert len(texts(app_a, AssistantBubble)) == 1
    finally:
        released.set()


@pytest.mark.slow
@ON_POSTGRESQL
async def test_the_server_going_away_mid_reply_keeps_it_and_the_app_goes_on(env, own_cluster, tmp_path):
    from tui_agent.core.store.db import open_store

    db = open_store(location.resolve(env.vault.root))  # the test's own cluster, bound from here on
    try:
        from tui_agent.core import profiles

        profiles.create_profile("live", {**{n: getattr(env.profile, n) for n in profiles.FIELD_NAMES}})
        profiles.use_profile("live")
        held = threading.Event()
        words = "".join(f"w{i} " for i in range(200))
        env.fake.script(
            Reply(text=words, chunk_size=4, chunk_delay_s=0.01, hold=held, hold_after_chunks=20),
            Reply(text="back again"),
        )
        app = make(env.vault)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.live_updates is not None and app.live_updates.listener.connected.is_set())
            app.query_one("#composer").load_text("a long one")
            await pilot.press("enter")
            await until(pilot, lambda: any(b.text for b in app.query(AssistantBubble)))
            own_cluster.stop("immediate")
            held.set()
            await until(pilot, lambda: not app.turns)
            cards = [str(card.render()) for card in app.query(ErrorCard)]
            assert len(cards) == 1, cards
            # One line says why and where the reply is kept (the vault's recovered/ folder); the
            # status line names the server (tests/ui/test_store_outage.py).
            kept = sorted((env.vault.root / "recovered").glob("*.md"))
            assert "\n" not in cards[0] and "Reply cut, database away" in cards[0], cards
            assert f"kept in recovered/{kept[0].name};" in cards[0], cards
            assert "waiting for the database server" in status_text(app)
            # What came before the store failed: on screen and in the file, though the store took less.
            (partial,) = texts(app, AssistantBubble)
            assert partial and words.startswith(partial) and kept[0].read_text().endswith(f"\n\n{partial}\n")
            # The server comes back: the next turn works without restarting the app ...
            own_cluster.start()
            app.query_one("#composer").load_text("are you there")
            await pilot.press("enter")
            await until(pilot, lambda: "back again" in texts(app, AssistantBubble) and not app.turns)
            assert Message.select().where(Message.content == "back again").count() == 1
            # ... and what another machine stores shows again (the listener reconnected by itself).
            await until(pilot, lambda: app.live_updates.listener.connected.is_set())
            env.fake.default_text = "from the other machine"
            machine_a = ask_process(other_machine(tmp_path), "--conversation", str(app.conversation_id), "still live?")
            assert machine_a.wait(timeout=60) == 0, machine_a.stderr.read() if machine_a.stderr else ""
            await until(pilot, lambda: "from the other machine" in texts(app, AssistantBubble))
    finally:
        db.close()


@pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)
async def test_a_sqlite_store_has_nothing_to_follow(env):
    """One machine's file: no listener, no thread."""
    app = make(env.vault)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.live_updates is None


def test_a_database_of_the_previous_version_gets_the_notifications(pg_url):
    """Upgrade: a database of the step before (no triggers) gets them, and a stored message is announced."""
    import psycopg

    from tui_agent.core.store import pg, pg_migrations

    url = location.parse(pg_url)
    pg.open_postgres(url, target_version=pg_migrations.STEPS.index(pg_migrations.P5)).close()
    db = pg.open_postgres(url)
    try:
        assert pg_migrations.current_version(db.connection()) == pg_migrations.LATEST
        with psycopg.connect(pg_url, autocommit=True) as listener:
            listener.execute("LISTEN tui_agent")
            conversation = history.new_conversation()
            message = history.add_message(conversation.id, "user", "hi")
            payloads: list[str] = []
            # until the message's notice came (not a fixed 2 s: a loaded server sends it later)
            for note in listener.notifies(timeout=60):
                payloads.append(note.payload)
                if any(f'"message" : {message.id}' in p and '"kind" : "insert"' in p for p in payloads):
                    break
        assert any(f'"message" : {message.id}' in p and '"kind" : "insert"' in p for p in payloads), payloads
    finally:
        db.close()
