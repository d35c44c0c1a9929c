"""``tui-agent db copy SRC DST``: a vault with branches, pictures, revisions and MCP rows goes
SQLite -> PostgreSQL -> a new SQLite file and comes back identical, row by row and byte by byte;
running it again changes nothing; a conflict is refused before anything is written."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_fork import tui_agent_argv
from fake_openai import Reply
from helpers import make_loop, reply_id, run_turn

from tui_agent.core import events as ev
from tui_agent.core.store import migrations
from tui_agent.core.store.copy_tables import TABLES

pytestmark = pytest.mark.slow


def cli(*args: str, vault: Path, stderr: Any = None) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "--vault", str(vault), *args]
    if stderr is not None:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=120)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg(pg_cluster: Any) -> Iterator[str]:
    """A new PostgreSQL database, named only where the test names it ($TUI_AGENT_DB stays unset)."""
    name = pg_cluster.create_database()
    yield pg_cluster.url(name)
    pg_cluster.drop_database(name)


def png(path: Path, colour: tuple[int, int, int]) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)
    return path


def sqlite_dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table db copy moves, in key order, with SQLite's own types."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t.name: conn.execute(f"SELECT * FROM {t.name} ORDER BY {', '.join(t.key)}").fetchall() for t in TABLES}
    finally:
        conn.close()


def pg_dump(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        dump: dict[str, Any] = {
            t.name: conn.execute(f"SELECT * FROM {t.name} ORDER BY {', '.join(t.key)}").fetchall() for t in TABLES
        }
        dump["media"] = conn.execute(
            "SELECT p.path, b.sha256, b.size, b.data FROM media_paths p JOIN media_blobs b USING (sha256) ORDER BY 1"
        ).fetchall()
        dump["sequences"] = [
            conn.execute(f"SELECT last_value, is_called FROM {seq}").fetchone()
            for (seq,) in conn.execute(
                "SELECT pg_get_serial_sequence(table_name, 'id') FROM information_schema.columns"
                " WHERE column_name = 'id' AND table_schema = 'public' ORDER BY table_name"
            ).fetchall()
        ]
    return dump


def pictures(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "media").rglob("*.png"))}


async def make_vault(env: Any, tmp_path: Path) -> None:
    """Branches (regenerate and edit), two generated pictures, an attached upload, a revision (a
    memory_sql UPDATE), an MCP server switched off for the profile, and a setting."""
    vault = env.vault.root
    env.fake.script(
        Reply(
            tool_calls=[
                ("generate_image", json.dumps({"prompt": "a fox", "path": "fox/red.png", "count": 2, "reason": "r"}))
            ]
        ),
        Reply(text="Two foxes."),
    )
    assert cli("ask", "--new", "draw a fox", vault=vault).returncode == 0
    upload = png(tmp_path / "outside" / "cat.png", (10, 200, 30))
    env.fake.script(Reply(text="A green square."))
    result = cli("ask", "--conversation", "1", f"/attach {upload} what is this", vault=vault)
    assert result.returncode == 0, result.stderr

    env.fake.script(Reply(text="first answer"), Reply(text="second answer"), Reply(text="edited answer"))
    events = await run_turn(env, "hello")
    conversation = next(e for e in events if isinstance(e, ev.Done)).conversation_id
    first = reply_id(events)
    loop = make_loop(env)
    try:
        [event async for event in loop.regenerate(first)]
        (question,) = _ids(env, conversation, "user")
        [event async for event in loop.run_turn(conversation, "hello, again", edit_of=question)]
    finally:
        await loop.aclose()

    update = json.dumps({"query": "UPDATE messages SET content = 'first answer (fixed)' WHERE id = " + str(first)})
    result = cli("tool", "memory_sql", update, "--yes", vault=vault)
    assert result.returncode == 0, result.stdout + result.stderr
    result = cli("mcp", "add", "clock", "--", sys.executable, "-m", "http.server", vault=vault)
    assert result.returncode == 0, result.stderr
    assert cli("mcp", "disable", "clock", "--profile", "test", vault=vault).returncode == 0

    dump = sqlite_dump(env.vault.db_path)
    assert len(dump["message_revisions"]) == 1 and len(dump["mcp_server_profiles"]) == 1
    assert len(dump["attachments"]) == 3 and len(dump["conversations"]) == 2
    assert sum(row[13] is not None for row in dump["messages"]) >= 3  # parent ids (branches)
    assert all(row[4] is not None for row in dump["conversations"])  # leaf ids
    assert len(pictures(vault)) == 3


def _ids(env: Any, conversation: int, role: str) -> list[int]:
    conn = sqlite3.connect(env.vault.db_path)
    try:
        sql = "SELECT id FROM messages WHERE conversation_id = ? AND role = ?"
        return [row[0] for row in conn.execute(sql, (conversation, role))]
    finally:
        conn.close()


async def test_round_trip_through_postgresql_is_identical_and_idempotent(env, pg, pg_cluster, tmp_path):
    await make_vault(env, tmp_path)
    original = sqlite_dump(env.vault.db_path)
    source = f"sqlite://{env.vault.db_path}"
    other = tmp_path / "other"

    there = cli("db", "copy", source, pg, vault=other)
    assert there.returncode == 0, there.stderr
    rows = sum(len(v) for k, v in original.items() if k not in ("conversations", "messages"))
    assert there.stdout.startswith(
        f"copied 2 conversations, {len(original['messages'])} messages, 3 pictures and {rows} other rows;"
        " skipped 0 already there"
    )
    assert there.stderr == ""
    in_pg = pg_dump(pg)
    assert {path: data for path, _, _, data in in_pg["media"]} == pictures(env.vault.root)
    assert all(sha == hashlib.sha256(data).hexdigest() for _, sha, _, data in in_pg["media"])
    assert not other.exists()  # a PostgreSQL destination needs no vault folder

    again = cli("db", "copy", source, pg, vault=other)
    assert again.returncode == 0, again.stderr
    total = sum(len(v) for v in original.values()) + 3
    assert again.stdout.startswith(
        f"copied 0 conversations, 0 messages, 0 pictures and 0 other rows; skipped {total} already there"
    )
    assert pg_dump(pg) == in_pg

    # PostgreSQL to PostgreSQL: the same rows, pictures and sequences.
    name = pg_cluster.create_database()
    try:
        result = cli("db", "copy", pg, pg_cluster.url(name), vault=other)
        assert result.returncode == 0, result.stderr
        assert pg_dump(pg_cluster.url(name)) == in_pg
    finally:
        pg_cluster.drop_database(name)

    back = tmp_path / "back"
    result = cli("db", "copy", pg, f"sqlite://{back / 'agent.db'}", vault=other)
    assert result.returncode == 0, result.stderr
    assert sqlite_dump(back / "agent.db") == original
    assert pictures(back) == pictures(env.vault.root)
    result = cli("db", "copy", pg, f"sqlite://{back / 'agent.db'}", vault=other)
    assert result.returncode == 0 and "copied 0 conversations" in result.stdout
    assert sqlite_dump(back / "agent.db") == original and pictures(back) == pictures(env.vault.root)

    # New rows in PostgreSQL take ids after the copied ones (its sequences were moved past them).
    env.fake.script(Reply(text="on the server"))
    # The copied endpoint is the shared store's setting: approved once on this machine first (issue 34).
    approved = cli("--db", pg, "approve", "--yes", vault=tmp_path / "machine-b")
    assert approved.returncode == 0, approved.stderr
    result = cli("--db", pg, "ask", "--new", "a new conversation", vault=tmp_path / "machine-b")
    assert result.returncode == 0, result.stderr
    newest = pg_dump(pg)
    assert [row[0] for row in newest["conversations"]] == [1, 2, 3]
    assert newest["messages"][-1][0] == original["messages"][-1][0] + 2

    # A row changed on one side is a conflict: refused with one line, nothing written (not even
    # the new conversation 3, which alone would have copied fine).
    conn = sqlite3.connect(back / "agent.db")
    conn.execute("UPDATE messages SET content = 'changed here' WHERE id = 2")
    conn.commit()
    conn.close()
    changed = sqlite_dump(back / "agent.db")
    refused = cli("db", "copy", pg, f"sqlite://{back / 'agent.db'}", vault=other)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "error: conflict: messages id 2 is in both stores with different values (content): refused, nothing "
        "written; copy into an empty store, or remove that row from one of them"
    ]
    assert sqlite_dump(back / "agent.db") == changed

    # Put back, it copies what is new; a setting both have (the last conversation) keeps the
    # destination's value: settings are the preferences of whoever uses the store.
    conn = sqlite3.connect(back / "agent.db")
    conn.execute("UPDATE messages SET content = ? WHERE id = 2", (original["messages"][1][3],))
    conn.commit()
    conn.close()
    result = cli("db", "copy", pg, f"sqlite://{back / 'agent.db'}", vault=other)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"copied 1 conversations, 2 messages, 0 pictures and 0 other rows; skipped {total} already there"
        " (1 of them settings the destination has its own value for)"
    )
    final = sqlite_dump(back / "agent.db")
    assert final["settings"] == original["settings"]
    assert final["messages"][: len(original["messages"])] == original["messages"]
    assert [row[3] for row in final["messages"][-2:]] == ["a new conversation", "on the server"]


async def test_a_different_picture_at_the_same_path_is_refused_before_any_row(env, tmp_path):
    await make_vault(env, tmp_path)
    target = tmp_path / "v2"
    png(target / "media" / "fox" / "red-2.png", (1, 2, 3))
    kept = (target / "media" / "fox" / "red-2.png").read_bytes()
    result = cli("db", "copy", f"sqlite://{env.vault.db_path}", f"sqlite://{target / 'agent.db'}", vault=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: conflict: the picture media/fox/red-2.png is in both stores with different bytes: refused, "
        "nothing written; copy into an empty store, or move one of the pictures aside"
    ]
    assert all(rows == [] for rows in sqlite_dump(target / "agent.db").values())
    assert pictures(target) == {"media/fox/red-2.png": kept}


def test_progress_bar_on_a_terminal_and_a_count_at_the_end(env, tmp_path):
    primary, secondary = pty.openpty()
    try:
        dest = f"sqlite://{tmp_path / 'copy.db'}"
        process = subprocess.Popen(
            [
                *tui_agent_argv(),
                "--vault",
                str(tmp_path),
                "db",
                "copy",
                f"sqlite://{env.vault.db_path}",
                dest,
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=secondary,
            text=True,
            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"},
        )
        os.close(secondary)
        seen = b""
        while True:
            ready, _, _ = select.select([primary], [], [], 60)
            assert ready, seen
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(primary)
    text = seen.decode(errors="replace")
    assert process.returncode == 0, text
    assert "checking" in text and "copying" in text and "━" in text and "rows and pictures" in text
    assert out.startswith("copied 0 conversations, 0 messages, 0 pictures and 2 other rows; skipped 0 already there")

    quiet = cli("db", "copy", f"sqlite://{env.vault.db_path}", dest, vault=tmp_path)
    assert quiet.stderr == ""  # not a terminal: no bar
    assert quiet.stdout.startswith("copied 0 conversations, 0 messages, 0 pictures and 0 other rows; skipped 2")


def test_clear_one_line_errors(tmp_path, pg_cluster):
    vault = tmp_path / "vault"
    good = tmp_path / "good.db"
    conn = sqlite3.connect(good)
    migrations.migrate(conn)
    conn.close()

    def refused(src: str, dst: str) -> str:
        result = cli("db", "copy", src, dst, vault=vault)
        assert result.returncode == 1 and result.stdout == "", result
        lines = result.stderr.splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    closed = pg_cluster.url("nothing").replace(f":{pg_cluster.port}/", ":1/")
    assert "cannot reach PostgreSQL at postgres@127.0.0.1:1/nothing" in refused(f"sqlite://{good}", closed)
    assert "the source and the destination are the same store" in refused(f"sqlite://{good}", f"sqlite:{good}")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 100)
    assert "is not a tui-agent database" in refused(f"sqlite://{text}", f"sqlite://{tmp_path / 'x.db'}")
    assert "no such file" in refused(f"sqlite://{tmp_path / 'missing.db'}", f"sqlite://{tmp_path / 'x.db'}")
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (a)")
    conn.close()
    assert "another program" in refused(f"sqlite://{foreign}", f"sqlite://{tmp_path / 'x.db'}")
    assert not (tmp_path / "x.db").exists()  # no destination is made for a source that is refused

    newer = tmp_path / "newer.db"
    conn = sqlite3.connect(newer)
    migrations.migrate(conn)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = newer.read_bytes()
    assert "newer tui-agent" in refused(f"sqlite://{good}", f"sqlite://{newer}")
    assert newer.read_bytes() == before
    assert "newer tui-agent" in refused(f"sqlite://{newer}", f"sqlite://{tmp_path / 'y.db'}")


def test_an_older_source_is_read_as_it_is_never_migrated(tmp_path):
    old = tmp_path / "old" / "agent.db"
    old.parent.mkdir()
    conn = sqlite3.connect(old)
    migrations.migrate(conn, target=migrations.STEPS.index(migrations.V_BRANCHES))
    now = "2025-01-01 00:00:00.000000"
    conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES ('old', ?, ?)", (now, now))
    for role, text in (("user", "u1"), ("assistant", "a1")):
        conn.execute(
            "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, ?, ?, ?)", (role, text, now)
        )
    conn.commit()
    conn.close()
    before = old.read_bytes()
    result = cli("db", "copy", f"sqlite://{old}", f"sqlite://{tmp_path / 'new' / 'agent.db'}", vault=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("copied 1 conversations, 2 messages, 0 pictures and 0 other rows;")
    assert old.read_bytes() == before  # read-only: not migrated
    new = sqlite3.connect(tmp_path / "new" / "agent.db")
    try:
        assert new.execute("SELECT id, content, parent_id, reasoning FROM messages").fetchall() == [
            (1, "u1", None, None),
            (2, "a1", None, None),
        ]
        assert new.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST
    finally:
        new.close()


def test_missing_and_unsafe_pictures_are_named_and_a_backup_file_uses_the_current_vault(env, tmp_path):
    vault = env.vault.root
    png(vault / "media" / "cats" / "c.png", (200, 0, 0))
    png(tmp_path / "secret.png", (0, 0, 0))  # vault/media/../../secret.png
    outside = tmp_path / "outside"
    png(outside / "x.png", (0, 0, 9))
    (vault / "media" / "link").symlink_to(outside)
    conn = sqlite3.connect(env.vault.db_path)
    now = "2025-01-01 00:00:00.000000"
    conn.execute("INSERT INTO conversations(id, title, created_at, updated_at) VALUES (1, 'c', ?, ?)", (now, now))
    conn.execute("INSERT INTO messages(id, conversation_id, role, created_at) VALUES (1, 1, 'user', ?)", (now,))
    for position, path in enumerate(
        ["media/cats/c.png", "media/cats/gone.png", "media/../../secret.png", "media/link/x.png"]
    ):
        conn.execute(
            "INSERT INTO attachments(message_id, position, path) VALUES (1, ?, ?)",
            (position, path),
        )
    conn.commit()
    conn.close()

    current = tmp_path / "current"
    backup = tmp_path / "backups" / "monday.db"
    result = cli("db", "copy", f"sqlite://{env.vault.db_path}", f"sqlite://{backup}", vault=current)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("copied 1 conversations, 1 messages, 1 pictures and 6 other rows;")
    assert result.stderr.splitlines() == [
        "warning: 2 picture(s) the source names were not found: media/cats/gone.png, media/link/x.png "
        "(their rows were copied)",
        "warning: 1 picture(s) the source names were refused (not a path under media/): media/../../secret.png "
        "(their rows were copied)",
    ]
    # A file not named agent.db is no vault's own store: its pictures go to the current vault.
    assert pictures(current) == {"media/cats/c.png": (vault / "media" / "cats" / "c.png").read_bytes()}
    assert not (tmp_path / "backups" / "media").exists()
    assert len(sqlite_dump(backup)["attachments"]) == 4


def test_postgresql_sources_an_older_schema_and_a_database_that_is_not_a_store(tmp_path, pg_cluster, pg):
    import psycopg

    from tui_agent.core.store import pg_migrations

    name = pg_cluster.create_database()
    try:
        result = cli("db", "copy", pg_cluster.url(name), f"sqlite://{tmp_path / 'a.db'}", vault=tmp_path)
    finally:
        pg_cluster.drop_database(name)
    assert result.returncode == 1
    assert result.stderr.strip().endswith("is not a tui-agent store (it has no tui-agent schema)")
    assert not (tmp_path / "a.db").exists()

    with psycopg.connect(pg, autocommit=True) as conn:
        pg_migrations.migrate(conn, 1)  # before pictures were kept in the database
        now = "2025-01-01 00:00:00.000000"
        conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES ('t', %s, %s)", (now, now))
        conn.execute(
            "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'hi', %s)", (now,)
        )
        conn.execute("INSERT INTO attachments(message_id, position, path) VALUES (1, 0, 'media/uploads/a.png')")
    # No pictures in that database: the one it names is taken from the current vault's media/.
    cached = png(tmp_path / "current" / "media" / "uploads" / "a.png", (5, 5, 5)).read_bytes()
    result = cli("db", "copy", pg, f"sqlite://{tmp_path / 'b' / 'agent.db'}", vault=tmp_path / "current")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("copied 1 conversations, 1 messages, 1 pictures")
    assert pictures(tmp_path / "b") == {"media/uploads/a.png": cached}
    with psycopg.connect(pg) as conn:
        assert pg_migrations.current_version(conn) == 1  # read as it is, never migrated


def test_a_picture_that_cannot_be_written_rolls_the_rows_back(env, tmp_path):
    png(env.vault.root / "media" / "fox" / "red.png", (1, 1, 1))
    conn = sqlite3.connect(env.vault.db_path)
    now = "2025-01-01 00:00:00.000000"
    conn.execute("INSERT INTO conversations(id, title, created_at, updated_at) VALUES (1, 'c', ?, ?)", (now, now))
    conn.execute("INSERT INTO messages(id, conversation_id, role, created_at) VALUES (1, 1, 'tool', ?)", (now,))
    conn.execute("INSERT INTO attachments(message_id, position, path) VALUES (1, 0, 'media/fox/red.png')")
    conn.commit()
    conn.close()
    target = tmp_path / "v3"
    (target / "media").mkdir(parents=True)
    (target / "media" / "fox").write_text("a file where a folder should be")
    result = cli("db", "copy", f"sqlite://{env.vault.db_path}", f"sqlite://{target / 'agent.db'}", vault=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: cannot copy the picture media/fox/red.png: File exists: the destination's rows were rolled back "
        "(pictures already written stay: copying again skips them)"
    ]
    assert all(rows == [] for rows in sqlite_dump(target / "agent.db").values())
