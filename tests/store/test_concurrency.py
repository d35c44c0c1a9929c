"""Many writers on one vault at once: real `tui-agent ask` processes against a loopback model server."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from backends import BOTH_BACKENDS
from cli_fork import ask_process, tui_agent_argv
from fake_openai import FakeOpenAI, Reply
from helpers import rows
from pilot_helpers import running, until

from tui_agent.core import profiles
from tui_agent.core.store import db, migrations
from tui_agent.core.vault import Vault

pytestmark = pytest.mark.slow

WRITERS = 20


def machines(env, tmp_path: Path) -> list[Path]:
    """The vault folders the writers use: on PostgreSQL two, as two machines on one database have
    (``$TUI_AGENT_DB`` names it for every process); on SQLite the one vault's file."""
    if env.vault.db_path.exists():
        return [env.vault.root]
    return [env.vault.root, Vault(tmp_path / "machine-b").init().root]


@BOTH_BACKENDS
def test_twenty_concurrent_asks_and_a_long_streaming_writer_lose_nothing(env, tmp_path):
    # The long-lived writer streams a long reply from its own server (its own profile), flushing the
    # growing row every half second while the 20 short asks insert and finish theirs.
    slow_server = FakeOpenAI().start()
    writers_done = threading.Event()  # the long reply ends only after every short ask has finished
    try:
        long_reply = "".join(f"w{i} " for i in range(600))
        slow_server.script(Reply(text=long_reply, chunk_size=6, chunk_delay_s=0.02, hold=writers_done))
        profiles.create_profile(
            "slow", {**_fields(env.profile), "base_url": slow_server.base_url, "request_timeout_s": 300}
        )
        env.fake.default_text = "short answer"
        vault, vaults = env.vault.root, machines(env, tmp_path)
        streaming = subprocess.Popen(
            [
                *tui_agent_argv(),
                "ask",
                "--vault",
                str(vault),
                "--profile",
                "slow",
                "--new",
                "the long one",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        assert streaming.stdout is not None
        first = streaming.stdout.read(3)  # the long row exists and is being written
        writers = [
            ask_process(vaults[i % len(vaults)], *(["--new"] if i % 4 > 1 else []), f"question number {i}")
            for i in range(WRITERS)
        ]
        outcomes = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in writers]
        assert streaming.poll() is None  # it was writing the whole time
        writers_done.set()
        rest, streaming_err = streaming.communicate(timeout=300)
    finally:
        writers_done.set()
        slow_server.stop()
    assert [code for code, _ in outcomes] == [0] * WRITERS, [err for _, err in outcomes if err]
    assert streaming.returncode == 0, streaming_err
    assert (first + rest).decode() == long_reply + "\n"

    stored = _messages_of_an_intact_store(env)
    users = sorted(content for role, content, _ in stored if role == "user")
    assert users == sorted([f"question number {i}" for i in range(WRITERS)] + ["the long one"])
    assistants = [(content, status) for role, content, status in stored if role == "assistant"]
    assert sorted(assistants) == sorted([("short answer", "complete")] * WRITERS + [(long_reply, "complete")])
    assert {status for _, _, status in stored} == {"complete"}
    assert len(stored) == 2 * (WRITERS + 1)


def test_first_use_of_a_vault_by_many_processes_at_once(tmp_path, fake_llm):
    """A fresh vault: every process migrates and creates the default profile; exactly one wins."""
    vault = tmp_path / "fresh"
    env = {
        "PATH": str(Path(sys.executable).parent),
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "k",
        "HOME": str(tmp_path),
    }
    procs = [
        subprocess.Popen(
            [*tui_agent_argv(), "ask", "--vault", str(vault), "--new", f"hello {i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(8)
    ]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in results] == [0] * 8, [err for _, err in results]
    conn = sqlite3.connect(vault / "agent.db")
    try:
        assert conn.execute("SELECT name FROM profiles").fetchall() == [("default",)]
        assert conn.execute("SELECT count(*) FROM messages WHERE status = 'complete'").fetchone() == (16,)
    finally:
        conn.close()


def _fields(profile: object) -> dict[str, object]:
    return {name: getattr(profile, name) for name in profiles.FIELD_NAMES}


@BOTH_BACKENDS
async def test_twenty_asks_while_the_app_streams_a_reply_lose_nothing(env, tmp_path):
    """The running app (a real AgentApp on the same vault) streams a long reply, flushing its row,
    while 20 `tui-agent ask` processes write theirs: every message of both is stored, complete."""

    fast = FakeOpenAI().start()
    writers_done = threading.Event()
    try:
        fast.default_text = "short answer"
        profiles.create_profile("fast", {**_fields(env.profile), "base_url": fast.base_url})
        profiles.use_profile(env.profile.name)
        # The app's reply waits for all 20 asks before it ends: on a loaded machine that outlasts 5 s.
        profiles.set_field(env.profile, "request_timeout_s", "300")
        long_reply = "".join(f"a{i} " for i in range(600))
        async with running(env, Reply(text=long_reply, chunk_size=6, chunk_delay_s=0.02, hold=writers_done)) as (
            app,
            pilot,
        ):
            app.conversation_view.composer.load_text("the app's question")
            await pilot.press("enter")
            for _ in range(600):  # until the app's reply row exists and is being written
                await pilot.pause(0.05)
                if rows(env.vault.db_path, "SELECT count(*) FROM messages WHERE status = 'streaming'")[0][0]:
                    break
            vaults = machines(env, tmp_path)
            writers = [
                ask_process(vaults[i % len(vaults)], "--profile", "fast", *(["--new"] if i % 4 > 1 else []), f"ask {i}")
                for i in range(WRITERS)
            ]
            while any(p.poll() is None for p in writers):
                await pilot.pause(0.1)
            assert app.turns, "the app's reply was still streaming while the asks wrote"
            writers_done.set()
            await until(pilot, lambda: not app.turns)
            outcomes = [(p.returncode, p.stderr.read() if p.stderr else "") for p in writers]
    finally:
        writers_done.set()
        fast.stop()
    assert [code for code, _ in outcomes] == [0] * WRITERS, [err for _, err in outcomes if err]
    stored = _messages_of_an_intact_store(env)
    users = sorted(content for role, content, _ in stored if role == "user")
    assert users == sorted([f"ask {i}" for i in range(WRITERS)] + ["the app's question"])
    assistants = sorted((content, status) for role, content, status in stored if role == "assistant")
    assert assistants == sorted([("short answer", "complete")] * WRITERS + [(long_reply, "complete")])
    assert len(stored) == 2 * (WRITERS + 1)


def _messages_of_an_intact_store(env) -> list[tuple[str, str, str]]:
    """Every message's (role, content, status), after checking the store: SQLite's own integrity
    check, and on both that each conversation is one unbroken branch (writers appending at once
    each found the leaf the other left: no message lost from the conversation's path)."""
    if env.vault.db_path.exists():
        conn = sqlite3.connect(env.vault.db_path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            conn.close()
    tree = rows(env.vault.db_path, "SELECT conversation_id, id, parent_id FROM messages ORDER BY id")
    leaves = dict(rows(env.vault.db_path, "SELECT id, leaf_id FROM conversations"))
    for conversation, leaf in leaves.items():
        parents = {message: parent for owner, message, parent in tree if owner == conversation}
        path, at = [], leaf
        while at:
            path.append(at)
            at = parents[at]
        assert sorted(path) == sorted(parents), f"conversation {conversation}: messages off its branch"
    return [tuple(row) for row in rows(env.vault.db_path, "SELECT role, content, status FROM messages ORDER BY id")]


class _OtherProcessMigratesBetweenStatements:
    """A connection on which another process creates the schema right after each statement ends."""

    def __init__(self, conn: sqlite3.Connection, other: sqlite3.Connection) -> None:
        self.conn, self.other = conn, other

    def execute(self, sql: str, *params: object) -> sqlite3.Cursor:
        cursor = self.conn.execute(sql, *params)
        rows = cursor.fetchall()
        migrations.migrate(self.other)
        return _Rows(rows)


class _Rows:
    def __init__(self, rows: list) -> None:
        self.rows = rows

    def fetchone(self) -> object:
        return self.rows[0]


def test_a_schema_another_process_creates_while_we_look_is_not_a_foreign_database(tmp_path):
    """Regression: the version and the tables were read apart, so a vault another process was creating
    at that moment looked like another program's database (version 0, yet tables)."""
    path = tmp_path / "agent.db"
    ours, other = sqlite3.connect(path, isolation_level=None), sqlite3.connect(path, isolation_level=None)
    try:
        db._check_schema(_OtherProcessMigratesBetweenStatements(ours, other), path)  # type: ignore[arg-type]
        assert migrations.current_version(ours) == migrations.LATEST
        db._check_schema(ours, path)  # and once created, it is ours
    finally:
        ours.close()
        other.close()
