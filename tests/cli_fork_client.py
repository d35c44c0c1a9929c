"""``python -m tui_agent ARGS`` for tests, run by a fork of ``cli_fork_server.py`` when one is up.

Started as ``python -I -S cli_fork_client.py SOCKET ARGS`` (no site: it starts in a few ms). It sends
the fork server its arguments, environment, working directory and stdin, stdout and stderr; it
forwards the signals it gets to the child and exits as the child did. Without a server (the
socket gone) or when the server refuses the run, it execs
``python -m tui_agent ARGS`` itself, so a test gets the same program either way. Started as
``... cli_fork_client.py SOCKET --script PATH ARGS``, the program is ``python PATH ARGS``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def exec_python(args: list[str], script: str | None) -> None:
    program = [script] if script is not None else ["-m", "tui_agent"]
    os.execv(sys.executable, [sys.executable, *program, *args])


def main(path: str, args: list[str]) -> None:
    script = None
    if args[:1] == ["--script"]:
        script, args = args[1], args[2:]
    # Forwarded from the start: a signal that comes before the program's pid is known (the program
    # may write to the client's stdout before the server's "pid" line is read) waits for it.
    child: int | None = None
    early: list[int] = []

    def forward(number: int, _frame: object) -> None:
        if child is None:
            early.append(number)
            return
        try:
            os.kill(child, number)
        except ProcessLookupError:
            pass  # it ended: its exit status is on its way

    for number in FORWARDED:
        signal.signal(number, forward)
    body = json.dumps({"script": script, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [struct.pack("!I", len(body))], [0, 1, 2])
        conn.sendall(body)
        reader = conn.makefile("r")
        first = reader.readline().split()
    except OSError:
        first = []
    if len(first) != 2 or first[0] != "pid":
        conn.close()
        for number in FORWARDED:
            signal.signal(number, signal.SIG_DFL)
        if early:  # what the program would have got before it started: it does not start
            os.kill(os.getpid(), early[0])
        exec_python(args, script)
    child = int(first[1])
    for held in early:
        forward(held, None)
    try:
        line = reader.readline().split()
    except OSError:
        line = []
    if len(line) != 2 or line[0] != "exit":  # the server died: the program ends with this process
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os._exit(1)
    code = int(line[1])
    if code < 0:  # died of a signal: so does this process, as a parent would see it
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
