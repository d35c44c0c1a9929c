"""The app ends within two seconds of losing its terminal (or of a SIGTERM), at any moment.

A closed terminal (tmux killed, xterm closed, ssh dropped) hangs up the app's tty: reads return
end-of-file, writes fail with EIO. Textual's writer thread died on the first failed write and the
app then waited for it forever in ``WriterThread.stop`` (its queue full), holding the vault and
deaf to SIGTERM (asyncio's signal handlers run only in the blocked event loop); its input thread
spun on end-of-file. So, here:

- the driver's output file swallows a dead terminal's errors (the writer thread lives on and
  drops the output), and a failed write counts as the terminal going away;
- SIGHUP and SIGTERM are handled by plain signal handlers (they run even if the loop is stuck),
  which wake a watchdog thread started before the app;
- the watchdog also notices a hung-up tty on its own (``tcgetattr`` fails: no SIGHUP needed);
- once woken, it stops the input thread, asks the app to exit the normal way (the running reply
  is stored as cancelled, MCP servers stopped), and if the app has not ended after
  ``DEADLINE_S``, stores any still-streaming reply as cancelled (in the SQLite file or the
  PostgreSQL database the app uses, on a connection of its own that gives up quickly), ends the
  child processes and exits the process;
- an app that was told to end and has ended the normal way ends the process at once (an
  ``atexit`` hook): past that hook the interpreter stops its daemon threads, the watchdog
  included, and nothing would bound how long the rest of its end takes (on a loaded machine the
  normal way often takes about the deadline, so the two met there).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_agent.core import streaming_rows
from tui_agent.core.store.last_write import cancel_on, connect_quickly, quick_param

if TYPE_CHECKING:
    from tui_agent.core.store.location import StoreURL

log = logging.getLogger("tui_agent.ui")

DEADLINE_S = 1.2  # from the terminal going away (or SIGTERM) to the forced end (the promise: 2 s)
POLL_S = 0.25  # how often the watchdog looks at the tty when nothing woke it
# Mouse reporting, bracketed paste, Kitty keyboard protocol and focus events off; main screen; cursor.
RESTORE = "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[<u\x1b[?1004l\x1b[?1049l\x1b[?25h"
LOST = (errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF, errno.ENOTTY)
CANCEL_WAIT_S = 0.6  # the longest the forced end waits to store the reply as cancelled
# The longest the forced end waits for all its tidying up (the reply, the children, the terminal,
# the log): any of it may block for good on a lock the stuck main thread holds, or on a log or a
# terminal nobody reads, and the process must end all the same.
TIDY_S = CANCEL_WAIT_S + 0.4


class Lifeline:
    def __init__(self, store: StoreURL | Path, tty_fd: int | None) -> None:
        self.store = store  # the SQLite file, or the store's URL (PostgreSQL)
        self.tty_fd = tty_fd
        self.reason = ""
        self.exit_app: Callable[[], None] | None = None  # set once the app's loop runs (attach)
        self.stop_input: Callable[[], None] | None = None  # set by the driver
        self.restore_terminal: Callable[[], None] | None = None  # set by the driver
        self.terminal_lost = False
        self._woken = threading.Event()
        self._signalled = False
        self._canceller: _Canceller | None = None
        self._thread = threading.Thread(target=self._watch, name="tui-agent-lifeline", daemon=True)

    def start(self) -> Lifeline:
        for signum in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(signum, self._on_signal)
        atexit.register(self._at_exit)
        self._thread.start()
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        # Runs in the main thread between two bytecodes, perhaps inside a lock the main thread holds:
        # only a flag and an Event that nothing else touches.
        if not self._signalled:
            self._signalled = True
            self.reason = "terminal closed (SIGHUP)" if signum == signal.SIGHUP else "SIGTERM"
            self.terminal_lost = signum == signal.SIGHUP
            self._woken.set()

    def lost(self, reason: str) -> None:
        """The terminal is gone (a write failed): any thread may call this."""
        if not self.reason:
            self.reason = reason
        self.terminal_lost = True
        self._woken.set()

    def _watch(self) -> None:
        while not self._woken.wait(POLL_S):
            if self.tty_fd is not None and not _tty_alive(self.tty_fd):
                self.lost("terminal hung up")
        _in_background(log.warning, "ending the app: %s", self.reason)  # a handler may block (see TIDY_S)
        # Its connection is opened now: a PostgreSQL server has the whole deadline to answer.
        self._canceller = _Canceller(self.store).start()
        if self.terminal_lost and self.stop_input is not None:
            with contextlib.suppress(Exception):
                self.stop_input()  # its reads only see end-of-file now: it would spin
        if self.exit_app is not None:
            with contextlib.suppress(Exception):
                self.exit_app()
        time.sleep(DEADLINE_S)  # the process ends before this when the app exits in time
        self._force_exit()

    def _at_exit(self) -> None:
        """The main thread at the interpreter's end: after an end the lifeline asked for, the process
        ends here, with the forced end's exit code. The watchdog still runs meanwhile (a log handler
        that blocks is bounded by its deadline); past this point it would not."""
        if not self._woken.is_set():
            return  # an ordinary quit: the interpreter ends as usual
        for stream in (sys.stdout, sys.stderr):  # what the app printed as it ended (an error, say)
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(Exception):
            logging.shutdown()
        os._exit(self._exit_code())

    def _exit_code(self) -> int:
        return 143 if self.reason == "SIGTERM" else 129

    def _force_exit(self) -> None:
        tidying = _in_background(self._tidy_up)
        tidying.join(TIDY_S)  # then the end, whatever it still waits for
        os._exit(self._exit_code())

    def _tidy_up(self) -> None:
        # Waited for a short while only: a server that does not answer (PostgreSQL across a network)
        # must not hold the end past the promise.
        (self._canceller or _Canceller(self.store).start()).finish(CANCEL_WAIT_S)
        end_children()
        if not self.terminal_lost and self.restore_terminal is not None:
            with contextlib.suppress(Exception):
                self.restore_terminal()  # SIGTERM with the terminal still there: leave it usable
        log.warning("the app did not end within %.1f s (%s): stopping it", DEADLINE_S, self.reason)
        with contextlib.suppress(Exception):
            logging.shutdown()


def _in_background(work: Callable[..., object], *args: object) -> threading.Thread:
    """``work`` in a daemon thread of its own: the watchdog never waits on it unbounded."""
    thread = threading.Thread(target=work, args=args, name="tui-agent-lifeline-tidy", daemon=True)
    thread.start()
    return thread


def _tty_alive(fd: int) -> bool:
    import termios

    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return exc.args[0] not in LOST
    except OSError:
        return False
    return True


class _Canceller:
    """Stores a still-streaming reply as cancelled at the forced end, with the words the app had of
    it (core/streaming_rows), in a thread of its own, on a
    connection opened as soon as the app is told to end (importing psycopg and reaching a server
    take their time; the UPDATE at the end does not)."""

    def __init__(self, store: StoreURL | Path) -> None:
        self.store = store
        self._go = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tui-agent-cancel", daemon=True)

    def start(self) -> _Canceller:
        self._thread.start()
        return self

    def finish(self, wait_s: float) -> None:
        self._go.set()
        self._thread.join(wait_s)

    def _run(self) -> None:
        try:
            conn = connect_quickly(self.store)
            try:
                self._go.wait()
                cancel_on(conn, quick_param(self.store), streaming_rows.words_so_far())
            finally:
                conn.close()
        except Exception:
            log.warning("could not store the streaming reply as cancelled", exc_info=True)


def end_children() -> None:
    """SIGTERM to this process's children (MCP servers, the SQL worker, image tools)."""
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            for pid in children.read_text().split():
                os.kill(int(pid), signal.SIGTERM)


class GuardedOutput:
    """The terminal's output file for Textual's writer thread: a dead terminal's errors end the
    app (through the lifeline) instead of the thread; what is written after is dropped."""

    def __init__(self, file: Any, lifeline: Lifeline) -> None:
        self._file = file
        self._lifeline = lifeline
        self._dead = False

    def write(self, text: str) -> int:
        if self._dead:
            return len(text)
        try:
            return int(self._file.write(text) or 0)
        except (OSError, ValueError) as exc:
            self._gone(exc)
            return len(text)

    def flush(self) -> None:
        if self._dead:
            return
        try:
            self._file.flush()
        except (OSError, ValueError) as exc:
            self._gone(exc)

    def _gone(self, exc: BaseException) -> None:
        self._dead = True
        self._lifeline.lost(f"terminal gone ({exc.__class__.__name__}: {exc})")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


_current: Lifeline | None = None


def install(store: StoreURL | Path) -> Lifeline:
    """Before the app starts (the console script; a served session too): handlers and watchdog.
    ``store``: the SQLite file, or the store's URL (see ``bound_store``)."""
    global _current
    stdin = sys.__stdin__
    tty_fd = stdin.fileno() if stdin is not None and stdin.isatty() else None
    _current = Lifeline(store, tty_fd).start()
    return _current


def attach(loop: Any, exit_app: Callable[[], None]) -> bool:
    """The app's loop runs: the lifeline ends the app through it. False when no lifeline is installed
    (tests, embedding): the caller keeps its own signal handling."""
    if _current is None:
        return False
    _current.exit_app = lambda: loop.call_soon_threadsafe(exit_app)
    return True


def guard_driver(app: Any, lifeline: Lifeline) -> None:
    """Give the app a Linux driver whose output cannot hang it (the web driver is left alone)."""
    from textual.drivers.linux_driver import LinuxDriver

    if app.driver_class is not LinuxDriver:
        return

    class GuardedLinuxDriver(LinuxDriver):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._file = GuardedOutput(self._file, lifeline)  # type: ignore[assignment]
            lifeline.stop_input = self.exit_event.set  # the input thread's own stop flag
            lifeline.restore_terminal = self.restore_now

        def restore_now(self) -> None:
            """What stopping the application mode undoes, written straight to the terminal (the
            app is stuck: its writer thread may never get to it)."""
            os.write(self._file.fileno(), RESTORE.encode())  # type: ignore[union-attr]
            if self.attrs_before is not None:
                import termios

                termios.tcsetattr(self.fileno, termios.TCSANOW, self.attrs_before)

    app.driver_class = GuardedLinuxDriver
