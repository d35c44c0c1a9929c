"""The app's side of memory_sql's forker (``sql_worker_forker``): workers forked from a process that
has loaded the runner once, instead of an interpreter started for every statement.

One forker per app, started at the first call with the worker's environment (a new one if that
environment changed) and restarted if it has gone (it leaves after a while without work). A worker
comes back as a ``ForkedWorker``: its PID, a pidfd to kill it by (a reaped PID can be reused; a
pidfd cannot point at another process), its stdout and stderr, and its exit code, which the forker
sends once it has reaped it. Linux only (pidfd, memfd); elsewhere ``sql_worker`` starts each worker
as a program, as it does if the forker cannot be started.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

AVAILABLE = sys.platform == "linux" and all(
    hasattr(module, name)
    for module, name in ((os, "pidfd_open"), (os, "memfd_create"), (signal, "pidfd_send_signal"), (socket, "send_fds"))
)


#: Seconds without a running worker after which the forker leaves (a new one starts when needed).
IDLE_S = 120.0


class ForkerGone(Exception):
    """The forker ended before it started the worker (twice in a row)."""


class _Forker:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tui_agent.core.tools.sql_worker_forker", str(os.getpid()), str(IDLE_S)],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                # read once by SQLite as it loads (before any worker): "." is each worker's own folder
                env={**env, "SQLITE_TMPDIR": ".", "TMPDIR": "."},
            )
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)
        self.control = mine

    def close(self) -> None:
        """The forker leaves when it reads the end of its socket (``subprocess`` reaps it later)."""
        self.control.close()


_FORKER: _Forker | None = None
_LOCK = threading.Lock()


def _send(packet: bytes, fds: list[int], env: dict[str, str], fresh: bool) -> None:
    """Hand a request to the forker: a new one if asked, if it has gone, or if the environment
    changed."""
    global _FORKER
    with _LOCK:
        for attempt in range(2):
            if _FORKER is not None and (fresh or attempt or _FORKER.env != env):
                _FORKER.close()
                _FORKER = None
            if _FORKER is None:
                _FORKER = _Forker(env)
            try:
                socket.send_fds(_FORKER.control, [packet], fds)
                return
            except OSError:  # gone (idle, killed) or not reading: a new one
                if attempt:
                    raise


async def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One packet with its descriptors; b"" once the forker has closed its end."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            packet, fds, _flags, _addr = socket.recv_fds(sock, 4096, 1)
            return packet, fds
        except BlockingIOError:
            pass
        except ConnectionError:
            return b"", []
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(sock.fileno(), _settle, ready)
        try:
            await ready
        finally:
            loop.remove_reader(sock.fileno())


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _kill_if_started(sock: socket.socket) -> None:
    """The caller gave up while the forker answered: kill the worker if its PID has come."""
    try:
        _packet, fds, _flags, _addr = socket.recv_fds(sock, 4096, 1)
    except OSError:
        return
    for fd in fds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        os.close(fd)


class _Pipe:
    """A worker's stdout or stderr fed to a ``StreamReader`` from the event loop (answers are
    bounded in size: no flow control needed)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader = asyncio.StreamReader()
        self.loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self.loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.reader.feed_data(data)
            return
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
            self.reader.feed_eof()


class ForkedWorker:
    """A worker the forker started: what ``sql_worker`` needs of ``asyncio.subprocess.Process``."""

    def __init__(self, pid: int, pidfd: int, answers: socket.socket, out: int, err: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._answers = answers
        self._pipes = (_Pipe(out), _Pipe(err))
        self.stdout, self.stderr = (pipe.reader for pipe in self._pipes)
        self._status = asyncio.ensure_future(self._read_status())

    def kill(self) -> None:
        if self.returncode is None and self._pidfd >= 0:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def wait(self) -> int:
        return await asyncio.shield(self._status)

    async def _read_status(self) -> int:
        try:
            packet, fds = await _receive(self._answers)
            for fd in fds:
                os.close(fd)
            status = json.loads(packet).get("status") if packet else None
            # no status: the forker died, and took the worker with it (its parent-death signal)
            self.returncode = os.waitstatus_to_exitcode(status) if isinstance(status, int) else -signal.SIGKILL
            return self.returncode
        finally:
            self._release()

    def _release(self) -> None:
        os.close(self._pidfd)
        self._pidfd = -1
        self._answers.close()

    def close(self) -> None:
        """Stop reading its output (once it is reaped: what is left is not read)."""
        for pipe in self._pipes:
            pipe.close()


async def spawn(raw: dict[str, Any], modules: list[str], work: Path, env: dict[str, str]) -> ForkedWorker:
    """Fork a worker for the request ``raw`` in the folder ``work``; ``modules`` are loaded in the
    forker first (once for all later workers)."""
    for fresh in (False, True):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setblocking(False)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = os.memfd_create("memory_sql-request", os.MFD_CLOEXEC)
        try:
            try:
                _write_all(request, json.dumps(raw).encode())
                packet = json.dumps({"cwd": str(work), "modules": modules}).encode()
                _send(packet, [request, out_w, err_w, theirs.fileno()], env, fresh)
            finally:  # the forker holds its copies now: its end of the answers ends with it
                for fd in (request, out_w, err_w):
                    os.close(fd)
                theirs.close()
            answer, fds = await _receive(mine)
        except BaseException:
            _kill_if_started(mine)
            for fd in (out_r, err_r):
                os.close(fd)
            mine.close()
            raise
        if answer and fds:
            return ForkedWorker(int(json.loads(answer)["pid"]), fds[0], mine, out_r, err_r)
        for fd in (out_r, err_r, *fds):
            os.close(fd)
        mine.close()
    raise ForkerGone("memory_sql's forker ended before it started the worker")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
