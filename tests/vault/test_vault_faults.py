"""A vault the file system will not let us use is one line, exit 1, nothing written (issue 26 item 6).

Each fault goes through the real console script, for a few commands and for the app's start without
a terminal: a read-only vault, ``media`` or ``logs`` being a file, ``--vault`` naming a file,
``/proc/self``, a 5,000-character path, an ``agent.db`` that is a FIFO (it used to hang the CLI).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

COMMANDS = [["profile", "list"], ["history", "list"], ["ask", "hi"], []]  # [] is the app's start
TIMEOUT_S = 20


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """The folder the commands run in (and whose contents must not change); the app's own
    config and cache folders are beside it."""
    work = tmp_path / "work"
    work.mkdir()
    return work


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every name under ``root`` with its kind, size and mtime (lstat: a FIFO is never opened)."""
    out = {}
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        out[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
    return out


def run(argv: list[str], cwd: Path, wrap: Callable[[list[str]], list[str]] = lambda a: a):
    home = cwd.parent / "xdg"  # the app's own files (the terminal-probe marker) go there, not in cwd
    env = {**os.environ, "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}
    return subprocess.run(
        wrap([sys.executable, "-m", "tui_agent", *argv]),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_each(vault_arg: str, cwd: Path, watched: Path, expected: str, wrap=lambda a: a) -> None:
    before = snapshot(watched)
    for command in COMMANDS:
        result = run(["--vault", vault_arg, *command], cwd, wrap)
        assert result.returncode == 1, (command, result.stderr)
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith("error: ") and expected in lines[0], (command, lines[0])
        assert "Traceback" not in result.stderr
    assert snapshot(watched) == before


@pytest.mark.slow
def test_vault_that_is_a_file(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    assert_one_line_each(
        "notes.txt", tmp_path, tmp_path, f"{tmp_path}/notes.txt is a file, not a folder, so it cannot be the vault"
    )


@pytest.mark.slow
@pytest.mark.parametrize("part", ["media", "logs"])
def test_media_or_logs_that_is_a_file(tmp_path, part):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / part).write_text("not a folder")
    assert_one_line_each(
        str(vault), tmp_path, tmp_path, f"{vault}/{part} is a file, not a folder, so it cannot be the vault's {part}"
    )


@pytest.mark.slow
def test_proc_self_as_the_vault(tmp_path):
    assert_one_line_each("/proc/self", tmp_path, tmp_path, "as the vault: media: No such file or directory")


@pytest.mark.slow
def test_a_five_thousand_character_path(tmp_path):
    long = str(tmp_path / ("a" * 5000))
    assert_one_line_each(long, tmp_path, tmp_path, "(5,0")
    result = run(["--vault", long, "profile", "list"], tmp_path)
    assert result.stderr.endswith("as the vault: the path is too long\n")
    assert len(result.stderr) < 400  # the path is shortened in the message


@pytest.mark.slow
def test_an_agent_db_that_is_a_fifo_does_not_hang(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    os.mkfifo(vault / "agent.db")
    assert_one_line_each(
        str(vault), tmp_path, tmp_path, f"{vault}/agent.db is not a plain file (a FIFO), so it cannot hold the database"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["agent.db-wal", "logs/agent.log"])
def test_a_fifo_beside_the_database_or_as_the_log_does_not_hang(tmp_path, name):
    vault = tmp_path / "v"
    (vault / "logs").mkdir(parents=True)
    os.mkfifo(vault / name)
    holds = "the log" if name.endswith(".log") else "the database"
    assert_one_line_each(
        str(vault), tmp_path, tmp_path, f"{vault}/{name} is not a plain file (a FIFO), so it cannot hold {holds}"
    )


def _read_only_wrapper(vault: Path) -> Callable[[list[str]], list[str]] | None:
    """Run the CLI with ``vault`` read-only: a read-only bind mount in a private mount namespace
    as root (root writes through file modes), plain file modes otherwise."""
    if os.geteuid() != 0:
        for path in [vault, *vault.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return lambda argv: argv
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        return None
    quoted = shlex.quote(str(vault))
    mount = f"mount --bind {quoted} {quoted} && mount -o remount,ro,bind {quoted} {quoted} && exec "
    return lambda argv: ["unshare", "-m", "sh", "-c", mount + shlex.join(argv)]


@pytest.mark.slow
@pytest.mark.parametrize("fresh", [False, True], ids=["used-before", "empty"])
def test_a_read_only_vault(tmp_path, fresh):
    vault = tmp_path / "v"
    if fresh:
        vault.mkdir()
    else:
        result = run(["--vault", str(vault), "profile", "list"], tmp_path)
        assert result.returncode == 0, result.stderr
    wrap = _read_only_wrapper(vault)
    if wrap is None:
        pytest.skip("needs a read-only mount (unshare -m) when run as root")
    try:
        expected = (
            "as the vault: media: it is read-only" if fresh else f"cannot use {vault}/agent.db: the vault is read-only"
        )
        assert_one_line_each(str(vault), tmp_path, tmp_path, expected, wrap)
    finally:
        for path in [vault, *vault.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.slow
def test_the_plain_app_start_in_a_folder_with_a_broken_jj_vault(tmp_path):
    vault = tmp_path / "jj_vault"
    vault.mkdir()
    (vault / "logs").write_text("not a folder")
    before = snapshot(tmp_path)
    result = run([], tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {vault}/logs is a file, not a folder, so it cannot be the vault's logs folder: move it aside "
        "or choose another vault with --vault\n"
    )
    assert snapshot(tmp_path) == before
