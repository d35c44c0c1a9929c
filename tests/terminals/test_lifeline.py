"""The lifeline's parts (ui/lifeline.py): a dead terminal's write errors do not kill Textual's writer
thread, a hung-up tty is noticed, and a stuck app is ended at the deadline with its streaming
reply stored as cancelled and its children stopped. The whole, in real tmux: test_dead_terminal.py."""

from __future__ import annotations

import errno
import inspect
import logging
import os
import pty
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from backends import BOTH_BACKENDS
from mcp_helpers import alive, wait_gone
from textual.drivers._writer_thread import WriterThread
from textual.drivers.linux_driver import LinuxDriver

from tui_agent.core.store import last_write
from tui_agent.ui import lifeline


class DeadTerminal:
    """What a hung-up tty does to a write: EIO."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")


def _stop_within(writer: WriterThread, seconds: float) -> bool:
    """Write more than the writer's queue holds, then stop it: True if that returned in time."""
    finished = threading.Event()

    def run() -> None:
        for _ in range(100):
            writer.write("\x1b[?1049l frame")
        writer.stop()
        finished.set()

    threading.Thread(target=run, daemon=True).start()
    return finished.wait(seconds)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_textual_writer_thread_dies_on_a_dead_terminal_and_hangs_its_stop():
    """Why the guard exists (if Textual fixes this, the guard may go: this test then fails)."""
    writer = WriterThread(DeadTerminal())  # type: ignore[arg-type]
    writer.start()
    assert not _stop_within(writer, 1.0)


def test_a_guarded_writer_drops_output_and_reports_the_lost_terminal(tmp_path):
    line = lifeline.Lifeline(tmp_path / "db", None)
    dead = DeadTerminal()
    writer = WriterThread(lifeline.GuardedOutput(dead, line))  # type: ignore[arg-type]
    writer.start()
    assert _stop_within(writer, 5.0)
    assert dead.writes == 1  # after the first failure nothing more reaches the terminal
    assert line.terminal_lost
    assert "Input/output error" in line.reason


async def test_the_guard_replaces_the_file_textual_writes_the_screen_to(monkeypatch, tmp_path):
    """The private name this relies on: LinuxDriver keeps its output file in ``_file`` and hands it
    to its WriterThread."""
    assert "WriterThread(self._file)" in inspect.getsource(LinuxDriver.start_application_mode)

    class App:
        driver_class = LinuxDriver

    line = lifeline.Lifeline(tmp_path / "db", None)
    app = App()
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # the driver's SIGTSTP/SIGCONT handlers
    lifeline.guard_driver(app, line)
    assert app.driver_class is not LinuxDriver and issubclass(app.driver_class, LinuxDriver)
    driver = app.driver_class(app)  # type: ignore[arg-type]
    assert isinstance(driver._file, lifeline.GuardedOutput)
    assert driver._file._file is sys.__stderr__
    line.stop_input()  # type: ignore[misc]
    assert driver.exit_event.is_set()  # the input thread's loop condition


def test_a_hung_up_tty_is_noticed_without_sighup():
    leader, follower = pty.openpty()
    try:
        assert lifeline._tty_alive(follower)
        os.close(leader)  # the terminal emulator is gone
        assert not lifeline._tty_alive(follower)
        assert os.read(follower, 10) == b""  # what Textual's input thread spun on
    finally:
        os.close(follower)


STUCK_APP = """
import queue, subprocess, sys, time
from pathlib import Path
from tui_agent.core.store import location
from tui_agent.ui import lifeline
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
Path(sys.argv[2]).write_text(str(child.pid))
where = sys.argv[1]
if where.startswith("postgresql:"):
    import psycopg  # noqa: F401  (an app on PostgreSQL has its driver loaded: its store runs on it)
lifeline.install(location.parse(where) if where.startswith("postgresql:") else Path(where))
from tui_agent.core import streaming_rows
# The app had more of the reply than its last flush stored (row 2), and its reasoning.
streaming_rows.streaming(2, lambda: ("half a reply, and more", "thought"))
full = queue.Queue(1)
full.put("frame")
print("stuck", flush=True)
full.put("the writer thread is dead: this waits forever")
"""


class MessagesTable:
    """A bare ``messages`` table in a SQLite file or a fresh PostgreSQL database; ``where`` is what
    ``lifeline.install`` is given (the file, or the store's URL) as text."""

    def __init__(self, tmp_path: Path, backend: str, request: pytest.FixtureRequest, columns: str) -> None:
        self.postgresql = backend == "postgresql"
        self.where = request.getfixturevalue("pg_url") if self.postgresql else str(tmp_path / "vault.db")
        key = "id SERIAL PRIMARY KEY" if self.postgresql else "id INTEGER PRIMARY KEY"
        self.run(f"CREATE TABLE messages ({key}, {columns})")

    def store(self) -> object:
        from tui_agent.core.store import location

        return location.parse(self.where) if self.postgresql else Path(self.where)

    def run(self, sql: str) -> list[tuple[object, ...]]:
        if self.postgresql:
            import psycopg

            with psycopg.connect(self.where) as conn:
                cursor = conn.execute(sql)
                return cursor.fetchall() if cursor.description else []
        conn = sqlite3.connect(self.where)
        try:
            with conn:
                return conn.execute(sql).fetchall()
        finally:
            conn.close()


@pytest.mark.slow
@BOTH_BACKENDS
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_an_app_stuck_in_the_writer_queue_is_ended_at_the_deadline(tmp_path, signum, store_backend, request):
    table = MessagesTable(tmp_path, store_backend, request, "role TEXT, content TEXT, reasoning TEXT, status TEXT")
    table.run("INSERT INTO messages (role, content, status) VALUES ('assistant', 'done', 'complete')")
    table.run("INSERT INTO messages (role, content, status) VALUES ('assistant', 'half a rep', 'streaming')")
    child_file = tmp_path / "child.pid"
    app = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(STUCK_APP), table.where, str(child_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert app.stdout is not None and app.stdout.readline() == "stuck\n"
        child = int(child_file.read_text())
        started = time.monotonic()
        app.send_signal(signum)
        code = app.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        if app.poll() is None:
            app.kill()
    assert code == (143 if signum == signal.SIGTERM else 129)
    # It waited for the app to end on its own first, then forced the end (app.wait's 60 s bounds a
    # hang; how soon after the deadline the process is gone is the machine's speed, not asserted).
    assert lifeline.DEADLINE_S <= took
    assert table.run("SELECT content, reasoning, status FROM messages ORDER BY id") == [
        ("done", None, "complete"),
        ("half a reply, and more", "thought", "cancelled"),  # the words the app had, not the last flush's
    ]
    assert wait_gone([child], timeout_s=30) == [], "the child process was left running"
    if alive(child):
        os.kill(child, signal.SIGKILL)


SLOW_END_APP = """
import sys, threading, time
from pathlib import Path
from tui_agent.ui import lifeline
line = lifeline.install(Path(sys.argv[1]))
ended = threading.Event()
line.exit_app = ended.set  # the app, asked to exit, does so the normal way


class SlowEnd:
    def __del__(self):
        time.sleep(600)  # the interpreter's own end, with its daemon threads (the watchdog) stopped


keep = SlowEnd()
print("ready", flush=True)
ended.wait()
"""


@pytest.mark.slow
def test_an_app_that_ended_as_asked_does_not_wait_for_the_interpreter_s_end(tmp_path):
    """An app asked to end that gets to the interpreter's end before the deadline: the interpreter
    stops the watchdog there, and nothing forced the end (a process lived on for as long as its end
    took, exit code 0; the streaming cases of test_dead_terminal end the normal way at 0.6-1.4 s
    under load, about the 1.2 s deadline). The process ends at the lifeline's atexit hook."""
    app = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SLOW_END_APP), str(tmp_path / "vault.db")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert app.stdout is not None and app.stdout.readline() == "ready\n"
        app.send_signal(signal.SIGTERM)
        code = app.wait(timeout=120)  # not the slow end's 600 s (how soon: the machine's speed)
    finally:
        if app.poll() is None:
            app.kill()
    assert code == 143  # SIGTERM's, as a forced end says


@BOTH_BACKENDS
def test_the_forced_end_cancels_only_rows_still_streaming(tmp_path: Path, store_backend, request):
    table = MessagesTable(tmp_path, store_backend, request, "content TEXT, reasoning TEXT, status TEXT")
    table.run("INSERT INTO messages (status) VALUES ('complete'), ('streaming'), ('error')")
    conn = last_write.connect_quickly(table.store())  # type: ignore[arg-type]
    try:
        words = [(row, "words", None) for row in (1, 2, 3)]
        assert last_write.cancel_on(conn, last_write.quick_param(table.store()), words) == 1  # type: ignore[arg-type]
    finally:
        conn.close()
    assert [r[0] for r in table.run("SELECT status FROM messages ORDER BY id")] == ["complete", "cancelled", "error"]


@BOTH_BACKENDS
def test_the_forced_end_stores_the_words_so_far_of_only_the_replies_still_streaming(tmp_path, store_backend, request):
    table = MessagesTable(tmp_path, store_backend, request, "content TEXT, reasoning TEXT, status TEXT")
    table.run(
        "INSERT INTO messages (content, status) VALUES"
        " ('flushed', 'streaming'), ('finished', 'complete'), ('other', 'streaming')"
    )
    words = [
        (3, "refused\x00" if table.postgresql else "other, then more", None),  # PostgreSQL text holds no NUL
        (1, "flushed, then more; it's 'quoted'", None),
        (2, "not this", "nor this"),
    ]
    conn = last_write.connect_quickly(table.store())  # type: ignore[arg-type]
    try:
        assert last_write.cancel_on(conn, last_write.quick_param(table.store()), words) == 2  # type: ignore[arg-type]
    finally:
        conn.close()
    assert table.run("SELECT content, reasoning, status FROM messages ORDER BY id") == [
        ("flushed, then more; it's 'quoted'", None, "cancelled"),
        ("finished", None, "complete"),  # finished meanwhile: its own final words stand
        # refused by the server: its last flush stands, and it is cancelled all the same
        ("other" if table.postgresql else "other, then more", None, "cancelled"),
    ]


@BOTH_BACKENDS
def test_the_forced_end_leaves_a_reply_another_machine_streams_as_it_is(tmp_path, store_backend, request):
    """Two machines on one database (or two apps on one file): this app's forced end cancels its own
    reply only. The other one's live reply stays "streaming" with its words, and its next flush
    still writes (core/reply writes a flush only while its row streams)."""
    table = MessagesTable(tmp_path, store_backend, request, "content TEXT, reasoning TEXT, status TEXT")
    table.run("INSERT INTO messages (content, status) VALUES ('mine', 'streaming'), ('theirs', 'streaming')")
    conn = last_write.connect_quickly(table.store())  # type: ignore[arg-type]
    try:
        assert last_write.cancel_on(conn, last_write.quick_param(table.store()), [(1, "mine, then more", None)]) == 1  # type: ignore[arg-type]
    finally:
        conn.close()
    assert table.run("SELECT content, status FROM messages ORDER BY id") == [
        ("mine, then more", "cancelled"),
        ("theirs", "streaming"),
    ]


def test_a_store_that_does_not_answer_does_not_hold_up_the_forced_end(tmp_path, monkeypatch):
    """The reply is stored as cancelled on a connection that may hang (a PostgreSQL server across a
    network): the forced end waits for it a short while only, then ends the process anyway."""
    hung = threading.Event()
    monkeypatch.setattr(lifeline, "connect_quickly", lambda store: hung.wait(600))
    monkeypatch.setattr(lifeline, "end_children", lambda: None)
    exits: list[int] = []
    monkeypatch.setattr(lifeline.os, "_exit", exits.append)
    monkeypatch.setattr(lifeline.logging, "shutdown", lambda: None)
    line = lifeline.Lifeline(tmp_path / "db", None)
    line.reason = "SIGTERM"
    started = time.monotonic()
    line._force_exit()
    took = time.monotonic() - started
    hung.set()
    assert exits == [143] and took < 300  # not the hanging connection's 600 s: its own short wait


def test_a_terminal_or_a_log_that_blocks_for_good_does_not_hold_up_the_forced_end(tmp_path, monkeypatch):
    """The stuck main thread may hold a lock the forced end needs: the terminal's (it was writing to
    a terminal nobody reads), or a log handler's. Giving the terminal back and logging then block for
    good; the process ends all the same. (An app was seen alive 30 s after SIGTERM at start-up, its
    two threads waiting on locks.)"""
    stuck = threading.Event()

    class Stuck(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            stuck.wait(600)

    handler = Stuck()
    logging.getLogger("tui_agent.ui").addHandler(handler)
    monkeypatch.setattr(lifeline, "connect_quickly", lambda store: stuck.wait(600))
    monkeypatch.setattr(lifeline, "end_children", lambda: None)
    exits: list[int] = []
    monkeypatch.setattr(lifeline.os, "_exit", exits.append)
    line = lifeline.Lifeline(tmp_path / "db", None)
    line.reason = "SIGTERM"
    line.restore_terminal = lambda: stuck.wait(600)  # type: ignore[assignment]
    ending = threading.Thread(target=line._force_exit, daemon=True)
    try:
        ending.start()
        ending.join(60)  # the promise is 2 s; a minute leaves a loaded machine room
        assert exits == [143]
    finally:
        stuck.set()
        logging.getLogger("tui_agent.ui").removeHandler(handler)


def _watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[lifeline.Lifeline, dict[str, threading.Event]]:
    """A lifeline whose app, input thread and forced exit are recorded (the deadline made short)."""
    monkeypatch.setattr(lifeline, "DEADLINE_S", 0.05)
    seen = {name: threading.Event() for name in ("exit_app", "stop_input", "forced")}
    line = lifeline.Lifeline(tmp_path / "db", None)
    line.exit_app = seen["exit_app"].set
    line.stop_input = seen["stop_input"].set
    monkeypatch.setattr(line, "_force_exit", seen["forced"].set)
    return line, seen


def test_a_lost_terminal_stops_the_input_thread_asks_the_app_to_exit_then_forces_it(tmp_path, monkeypatch):
    line, seen = _watched(tmp_path, monkeypatch)
    line._thread.start()
    line.lost("terminal gone (OSError: EIO)")
    assert seen["forced"].wait(60)
    assert seen["exit_app"].is_set() and seen["stop_input"].is_set()  # reads see only EOF now: no spinning


def test_sigterm_asks_the_app_to_exit_but_leaves_a_live_terminal_s_input_alone(tmp_path, monkeypatch):
    """The input thread's stop flag makes Textual skip restoring the terminal (mouse mode off...)."""
    line, seen = _watched(tmp_path, monkeypatch)
    line._thread.start()
    line._on_signal(signal.SIGTERM, None)
    assert seen["forced"].wait(60)
    assert seen["exit_app"].is_set() and not seen["stop_input"].is_set()
    assert line.reason == "SIGTERM"


def test_the_watchdog_notices_a_hung_up_tty_by_itself(tmp_path, monkeypatch):
    leader, follower = pty.openpty()
    monkeypatch.setattr(lifeline, "POLL_S", 0.01)
    line, seen = _watched(tmp_path, monkeypatch)
    line.tty_fd = follower
    polls: list[bool] = []
    real = lifeline._tty_alive
    monkeypatch.setattr(lifeline, "_tty_alive", lambda fd: polls.append(real(fd)) or polls[-1])
    try:
        line._thread.start()
        deadline = time.monotonic() + 10
        while len(polls) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert polls[:5] == [True] * 5 and not seen["exit_app"].is_set()  # a live terminal: nothing happens
        os.close(leader)
        assert seen["forced"].wait(60)
        assert seen["stop_input"].is_set() and line.reason == "terminal hung up"
    finally:
        os.close(follower)


async def test_a_forced_end_with_the_terminal_still_there_gives_it_back_as_it_was(monkeypatch, tmp_path):
    """SIGTERM and a stuck app: the forced end undoes the application mode itself (mouse
    reporting, alternate screen, raw mode), as Textual would have."""
    import termios
    import tty

    class App:
        driver_class = LinuxDriver

    line = lifeline.Lifeline(tmp_path / "db", None)
    app = App()
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    lifeline.guard_driver(app, line)
    driver = app.driver_class(app)  # type: ignore[arg-type]
    leader, follower = pty.openpty()
    try:
        terminal = os.fdopen(os.dup(follower), "w")
        driver._file = lifeline.GuardedOutput(terminal, line)
        driver.fileno = follower
        driver.attrs_before = termios.tcgetattr(follower)
        tty.setraw(follower)  # what application mode does
        assert termios.tcgetattr(follower) != driver.attrs_before
        line.restore_terminal()  # type: ignore[misc]
        assert os.read(leader, 4096).decode() == lifeline.RESTORE
        assert termios.tcgetattr(follower) == driver.attrs_before
        terminal.close()
    finally:
        os.close(leader)
        os.close(follower)
