"""``tui_agent_argv()``: the command line a test starts in place of ``python -m tui_agent``.

It runs the same ``tui_agent`` ``__main__`` in a fresh process, forked from a server that has
imported the CLI's modules once per test process (``cli_fork_server.py``), instead of importing
them again at each run (see that file for what the fork reproduces and when it falls back to
``python -m tui_agent``). Tests of the start-up itself (what is imported, how fast, a terminal's
session) start ``python -m tui_agent`` as before.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
PLAIN = [sys.executable, "-m", "tui_agent"]
_started: list[str] = []


def tui_agent_argv() -> list[str]:
    """``[python, -I, -S, cli_fork_client.py, SOCKET]``, or ``python -m tui_agent`` without a server."""
    if not _started:
        _started.append(_start() or "")
    if not _started[0]:
        return list(PLAIN)
    return [sys.executable, "-I", "-S", str(HERE / "cli_fork_client.py"), _started[0]]


def _start() -> str | None:
    folder = tempfile.mkdtemp(prefix="tui-fork-")
    path = os.path.join(folder, "s")
    server = subprocess.Popen(
        [sys.executable, str(HERE / "cli_fork_server.py"), path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=folder,
        text=True,
    )
    assert server.stdout is not None
    if server.stdout.readline().strip() != "ready":
        server.kill()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)
        return None

    def stop() -> None:
        assert server.stdin is not None
        server.stdin.close()  # the server kills what it still runs and exits
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return path
