"""memory_sql's forker: ``python -m tui_agent.core.tools.sql_worker_forker PARENT_PID`` loads the
statement runners once, then forks one worker per statement, so a memory_sql call no longer pays
an interpreter's start-up and the runner's imports (~0.1 s of CPU on SQLite, ~0.45 s with
PostgreSQL's psycopg and pglast).

Its standard input is one end of a socket pair held by the app (``sql_forked``), and nothing else
talks to it. Each request is one packet: a short JSON object (the worker's folder and the modules
to load) with four descriptors: a memfd holding the worker's request (read by the worker, never on
disk: it may carry a database password), the worker's stdout and stderr, and a socket the answers
go to: first the worker's PID with a pidfd (the app kills it through that, never by a PID that may
have been reused), then its wait status once this process has reaped it.

The worker is the same code as ``python -m tui_agent.core.tools.sql_worker_child``: it limits
itself (rlimits, its own hard deadline, death with this process) and runs one statement. This
process dies with the app (PR_SET_PDEATHSIG), and leaves once the app closes its end or after
a while without a worker (``sql_forked.IDLE_S``); the app starts a new one when it needs it.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import resource  # noqa: F401  (loaded once here: every worker sets its rlimits with it)
import select
import signal
import socket
import sys
import traceback
from typing import Any

from tui_agent.core.tools import sql_worker_child

#: Descriptors a request carries: the request's memfd, stdout, stderr, the answer socket.
FDS = 4


def _die_with(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the app was gone before prctl took effect
        os._exit(1)


class Forker:
    def __init__(self, control: socket.socket, idle_s: float) -> None:
        self.control = control
        self.idle_s = idle_s
        self.pid = os.getpid()
        self.answers: dict[int, socket.socket] = {}  # a running worker's PID -> where its status goes
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up fd hears it

    def run(self) -> int:
        while True:
            timeout = None if self.answers else self.idle_s
            ready, _, _ = select.select([self.control.fileno(), self.wake_r], [], [], timeout)
            if not ready:
                return 0  # idle: the app starts another forker when it needs one
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
            self.reap()
            if self.control.fileno() in ready and not self.take():
                return 0  # the app closed its end

    def take(self) -> bool:
        """One request: fork its worker and send its PID and pidfd. False once the app is gone."""
        try:
            packet, fds, _flags, _addr = socket.recv_fds(self.control, 65536, FDS)
        except (ConnectionError, BlockingIOError):
            return False
        if not packet:
            for fd in fds:
                os.close(fd)
            return False
        if len(fds) != FDS:
            for fd in fds:
                os.close(fd)
            return True
        payload, out, err, answer_fd = fds
        answer = socket.socket(fileno=answer_fd)
        try:
            request = json.loads(packet)
            for module in request.get("modules", ()):
                importlib.import_module(str(module))  # once, for every later worker
            pid = os.fork()
        except Exception as exc:  # said on the worker's stderr
            os.write(err, f"memory_sql's forker could not start the worker: {exc}\n".encode())
            answer.close()
            for fd in (payload, out, err):
                os.close(fd)
            return True
        if pid == 0:
            self._become_worker(request, (payload, out, err), answer)
        for fd in (payload, out, err):
            os.close(fd)
        self.answers[pid] = answer
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(answer, [json.dumps({"pid": pid}).encode()], [pidfd])
        except OSError:  # the app gave up on it: nobody would hold its deadline
            os.kill(pid, signal.SIGKILL)  # not reaped yet: the PID is still this worker's
        finally:
            os.close(pidfd)
        return True

    def reap(self) -> None:
        while self.answers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            answer = self.answers.pop(pid, None)
            if answer is not None:
                try:
                    answer.send(json.dumps({"status": status}).encode())
                except OSError:
                    pass
                answer.close()

    def _become_worker(self, request: dict[str, Any], fds: tuple[int, int, int], answer: socket.socket) -> None:
        """In the forked child: the worker's descriptors as 0, 1 and 2, nothing of the forker's."""
        code = 1
        try:
            payload, out, err = fds
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self.wake_r, self.wake_w):
                os.close(fd)
            for sock in (self.control, answer, *self.answers.values()):
                sock.close()
            raw = os.pread(payload, os.fstat(payload).st_size, 0)
            null = os.open(os.devnull, os.O_RDONLY)
            for source, target in ((null, 0), (out, 1), (err, 2)):
                os.dup2(source, target)
            for fd in {null, out, err, payload} - {0, 1, 2}:
                os.close(fd)
            # SQLite read SQLITE_TMPDIR when the forker loaded it, and it is "." (``sql_forked``):
            # a worker's spill files go to the folder it runs in, its own
            os.chdir(str(request["cwd"]))
            code = sql_worker_child.serve({**json.loads(raw), "parent": self.pid})
        except BaseException:  # the child never returns into the forker's loop
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)


def main() -> int:
    _die_with(int(sys.argv[1]))
    control = socket.socket(fileno=0)
    return Forker(control, float(sys.argv[2])).run()


if __name__ == "__main__":
    raise SystemExit(main())
