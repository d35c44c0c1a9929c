"""A process that imports the CLI's modules once and forks a fresh ``tui-agent`` for each test run.

Most of a ``python -m tui_agent ...`` run in a test is its imports (openai, pydantic, peewee,
psycopg: ~0.5-0.9 s of CPU each time, hundreds of times a test line). This server imports them
once; ``cli_fork_client.py`` (the program tests start in place of ``python -m tui_agent``) hands it
its argv, environment, working directory and its own stdin, stdout and stderr, and the server forks
a child that runs ``tui_agent``'s ``__main__`` as ``python -m`` would, on those file descriptors.
The client exits with the child's status (or dies of its signal), forwards the signals it gets,
and if the client is killed the child is killed.

A run the fork cannot reproduce is refused, and the client then execs ``python -m tui_agent``
itself: one whose environment changes how the interpreter starts (``PYTHON*``, ``LANG``,
``LC_*``), one for another program than this server's, or any run while this process has a thread. The server exits when its standard input
closes (the test process is gone), killing the children it still has.

Run as ``python cli_fork_server.py SOCKET``; it prints ``ready`` once it listens. With ``--script
PATH [MODULE...]`` it runs a Python program instead (an MCP server of the tests): it imports the
listed modules and the program's own imports once (the program's code run under another name than
``__main__``), and each child runs it as ``python PATH ARGS`` would.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import pkgutil
import runpy
import selectors
import signal
import socket
import struct
import sys
import threading
from typing import Any

HEADER = struct.Struct("!I")
STARTUP_PREFIXES = ("PYTHON", "LANG", "LC_")
#: Loaded by a run rather than at import (PostgreSQL's driver, the HTTP client's transport and TLS,
#: the config folders): most runs load some of them.
PRELOAD = (
    "psycopg",
    "pglast.parser",
    "httpcore2",
    "h11",
    "anyio",
    "anyio.streams.tls",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "anyio._core._streams",
    "anyio._core._sockets",
    "platformdirs",
    "truststore",
    "encodings.idna",
)


def startup_environment(env: dict[str, str]) -> dict[str, str]:
    """The variables that change how an interpreter starts (its paths, its text encoding)."""
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


def preload() -> None:
    """What the CLI's commands import, the way the product imports it (peewee without psycopg)."""
    from tui_agent.core import openai_import
    from tui_agent.core.store import driver

    driver.import_peewee()
    openai_import.load()
    for name in PRELOAD:
        importlib.import_module(name)
    import tui_agent.commands
    import tui_agent.core

    for package in (tui_agent.core, tui_agent.commands):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".serve" not in info.name:
                importlib.import_module(info.name)
    importlib.import_module("tui_agent.cli")
    assert "textual" not in sys.modules, "the CLI's modules must not import Textual"


def preload_script(script: str, modules: list[str]) -> None:
    """A program's imports (its top-level code run once, not as ``__main__``) and ``modules``."""
    for name in modules:
        importlib.import_module(name)
    runpy.run_path(script, run_name="__fork_preload__")
    assert threading.active_count() == 1, "a preloaded program must not start threads"


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client went away")
        data += chunk
    return data


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
    if len(head) < HEADER.size:
        head += _read_exactly(conn, HEADER.size - len(head))
    (size,) = HEADER.unpack(head)
    return json.loads(_read_exactly(conn, size)), fds


REAP_S = 1.0


def serve(path: str, script: str | None) -> dict[str, Any] | None:
    """Serve until stdin closes (returns None); in a forked child, return its request."""
    own_startup = startup_environment(dict(os.environ))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    gc.freeze()  # the imported objects stay shared with the children (no copy on a collection)
    print("ready", flush=True)
    while True:
        # Reaped at each wake-up by SIGCHLD, and every REAP_S besides while programs run: a child
        # whose SIGCHLD found nothing to wake (never seen, but a client would wait for its exit
        # status for ever) is reaped all the same.
        ready = selector.select(REAP_S if children else None)
        if not ready and children:
            _reap(children, selector)
        for key, _ in ready:
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _read_request(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                if (
                    request.get("script") != script
                    or startup_environment(request["env"]) != own_startup
                    or threading.active_count() != 1
                ):
                    with contextlib.suppress(OSError):  # a client gone meanwhile hears nothing
                        conn.sendall(b"exec\n")
                    for fd in fds:
                        os.close(fd)
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    selector.close()
                    for other in (listener, conn, *children.values()):
                        other.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    return request
                for fd in fds:
                    os.close(fd)
                try:
                    conn.sendall(f"pid {pid}\n".encode())
                except OSError:  # the client went away before it heard of its program: so does the program
                    os.kill(pid, signal.SIGKILL)
                children[pid] = conn  # reaped as any other
                selector.register(conn, selectors.EVENT_READ, pid)
            elif key.fileobj == wake_r:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                _reap(children, selector)
            elif key.fileobj == sys.stdin.fileno():
                if not os.read(sys.stdin.fileno(), 512):
                    for pid in children:
                        os.kill(pid, signal.SIGKILL)
                    return None
            else:  # the client closed its end: it was killed, so is its child
                conn = key.fileobj  # type: ignore[assignment]
                try:
                    said = conn.recv(64)
                except OSError:  # reset: the client died with bytes unread
                    said = b""
                if not said:
                    selector.unregister(conn)
                    try:
                        os.kill(key.data, signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        try:
            conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
        except OSError:
            pass
        try:
            selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()


def run_child(request: dict[str, Any], script: str | None) -> None:
    """Become ``python -m tui_agent ARGS`` (or ``python SCRIPT ARGS``) run in the client's folder
    with its environment and files."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if script is None:
        sys.path[0] = request["cwd"]  # where `python -m` puts the working directory
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        raw = open(fd, "rb" if fd == 0 else "wb", closefd=False)
        line_buffering = fd == 2 or (fd == 1 and os.isatty(1))
        stream = io.TextIOWrapper(raw, encoding=old.encoding, errors=old.errors, line_buffering=line_buffering)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    if script is not None:
        # A fresh `python SCRIPT` has no logging handler yet: the preload's top-level run may have
        # set one up (the MCP SDK's server does), bound to what this server's stderr was then.
        import logging

        logging.root.handlers.clear()
        sys.argv = [script, *request["args"]]
        runpy.run_path(script, run_name="__main__")
        return
    sys.argv = ["tui_agent", *request["args"]]
    runpy.run_module("tui_agent", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    program = sys.argv[3] if sys.argv[2:3] == ["--script"] else None
    if program is None:
        sys.path[0] = os.getcwd()
        preload()
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(program))  # where `python SCRIPT` puts it
        preload_script(program, sys.argv[4:])
    child_request = serve(sys.argv[1], program)
    if child_request is not None:
        run_child(child_request, program)
