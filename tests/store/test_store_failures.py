"""Failures of the store are one-line messages with exit code 1, and nothing is overwritten.

A full disk is real: a small tmpfs mounted in a private user + mount namespace (tests/small_disk.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import small_disk
from cli_fork import tui_agent_argv
from fake_openai import Reply
from repo_paths import TESTS

from tui_agent.core.store import migrations

LONG_REPLY = "x" * 3_000_000

needs_small_disk = pytest.mark.skipif(
    not small_disk.available(),
    reason="needs util-linux `unshare` and user namespaces to mount a small tmpfs (apt-get install util-linux)",
)


def on_full_disk(base_url: str, free_kb: int) -> dict:
    result = small_disk.run(
        "4m", [sys.executable, str(TESTS / "disk_full_driver.py"), base_url, str(free_kb), "write a lot"]
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
@needs_small_disk
def test_disk_full_mid_stream_ends_the_row_as_error_and_the_conversation_goes_on(fake_llm):
    # The disk is filled to the last byte while the reply streams; the next flush of the row fails.
    fake_llm.script(
        Reply(text="warm"), Reply(text=LONG_REPLY, chunk_size=20_000, chunk_delay_s=0.03), Reply(text="fine again")
    )
    report = on_full_disk(fake_llm.base_url, -1)
    assert report["code"] == 1
    lines = report["stderr"].splitlines()
    assert len(lines) == 1 and "Traceback" not in report["stderr"], report["stderr"]
    assert lines[0].startswith("error: the disk holding ") and "/vault/agent.db is full" in lines[0]
    assert "free some space" in lines[0]
    assert 0 < report["stdout"] < len(LONG_REPLY)
    roles = [(role, status) for role, status, _ in report["rows"]]
    assert roles == [
        ("user", "complete"),
        ("assistant", "complete"),
        ("user", "complete"),
        ("assistant", "error"),
    ]
    kept = report["rows"][3][2]
    assert kept and LONG_REPLY.startswith(kept)
    # The reserve was given up to write that status, and is made again once there is room.
    assert "agent.db-reserve" not in report["files"]
    assert report["after"]["code"] == 0, report["after"]["stderr"]
    assert report["after"]["stdout"] == "fine again\n"
    assert "agent.db-reserve" in report["files_after"]
    assert [row[1] for row in report["rows_after"]] == ["complete"] * 3 + ["error"] + ["complete"] * 2


@pytest.mark.slow
@needs_small_disk
def test_disk_already_full_is_a_message_and_loses_nothing(fake_llm):
    fake_llm.script(Reply(text="warm"), Reply(text="never stored"), Reply(text="fine again"))
    report = on_full_disk(fake_llm.base_url, 0)
    assert report["code"] == 1
    assert report["stderr"].count("\n") == 1 and "Traceback" not in report["stderr"]
    assert report["stderr"].startswith("error: the disk holding ") and "is full" in report["stderr"]
    assert report["rows"] == [["user", "complete", "warm up"], ["assistant", "complete", "warm"]]
    assert report["after"]["code"] == 0


def _run(*args: str, vault: Path) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), *args, "--vault", str(vault)] if args else []
    if not args:  # the app itself
        argv = [*tui_agent_argv(), "--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


COMMANDS = [
    (),
    ("ask", "hello"),
    ("tool", "show_image", '{"path": "a.png"}'),
    ("profile", "list"),
    ("profile", "set", "temperature", "0.5"),
    ("history", "list"),
    ("history", "search", "x"),
]


def _good_database(vault: Path) -> Path:
    result = _run("profile", "list", vault=vault)
    assert result.returncode == 0, result.stderr
    return vault / "agent.db"


def _garbage(db: Path) -> str:
    db.write_bytes(b"this is my shopping list, not a database\n" * 200)
    return "is not a tui-agent database (it is not a SQLite file)"


def _truncated(db: Path) -> str:
    data = db.read_bytes()
    assert len(data) > 8192
    db.write_bytes(data[:8192])
    return "is damaged: it is cut short (8,192 of"


def _newer(db: Path) -> str:
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {migrations.LATEST + 5}")
    conn.close()
    return f"schema version {migrations.LATEST + 5} is newer than this tui-agent ({migrations.LATEST}): upgrade"


def _foreign(db: Path) -> str:
    db.unlink()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.execute("INSERT INTO recipes VALUES ('soup')")
    conn.commit()
    conn.close()
    return "is a SQLite database of another program"


@pytest.mark.slow
@pytest.mark.parametrize("damage", [_garbage, _truncated, _newer, _foreign], ids=lambda f: f.__name__.strip("_"))
def test_unusable_database_is_refused_by_every_command_and_left_untouched(tmp_path, damage):
    vault = tmp_path / "vault"
    db = _good_database(vault)
    for leftover in ("agent.db-wal", "agent.db-shm"):
        assert not (vault / leftover).exists()
    expected = damage(db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for command in COMMANDS:
        result = _run(*command, vault=vault)
        assert result.returncode == 1, (command, result.stderr)
        assert result.stdout == "", command
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith(f"error: {db}"), (command, lines[0])
        assert expected in lines[0], (command, lines[0])
        assert "did not change it" in lines[0] or "upgrade" in lines[0]
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before, command
    assert sorted(p.name for p in vault.iterdir() if p.name.startswith("agent.db")) in (
        ["agent.db", "agent.db-reserve"],
        ["agent.db", "agent.db-reserve", "agent.db-shm", "agent.db-wal"],
    )


def test_a_folder_where_the_database_should_be(tmp_path):
    vault = tmp_path / "vault"
    (vault / "agent.db").mkdir(parents=True)
    result = _run("history", "list", vault=vault)
    assert result.returncode == 1
    assert result.stderr == f"error: {vault / 'agent.db'} is a folder, not a database: move it aside and run again\n"


def test_unwritable_vault_is_a_message(tmp_path):
    if shutil.which("id") and subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0":
        pytest.skip("root can write anywhere: run as a normal user to test a read-only vault")
    vault = tmp_path / "vault"
    _good_database(vault)
    (vault / "agent.db").unlink()
    vault.chmod(0o500)
    try:
        result = _run("history", "list", vault=vault)
    finally:
        vault.chmod(0o700)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: cannot use {vault / 'agent.db'}")
