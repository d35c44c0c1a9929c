"""``tui_agent_argv()``: the command line a test starts in place of ``python -m tui_agent``.

It runs the same ``tui_agent`` ``__main__`` in a fresh process, forked from a server that has
imported the CLI's modules once per test process (``cli_fork_server.py``), instead of importing
them again at each run (see that file for what the fork reproduces and when it falls back to
``python -m tui_agent``). Tests of the start-up itself (what is imported, how fast, a terminal's
session) start ``python -m tui_agent`` as before.

``script_argv(PATH, ...)`` does the same for a Python program of the tests (the MCP servers): a
server of its own imports the program's modules once, and each run is a fork of it.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
PLAIN = [sys.executable, "-m", "tui_agent"]
READY_S = 120.0  # a server's imports, on a machine as loaded as the tests' get
_started: dict[str, str] = {}  # per program ("" for tui_agent): its server's socket, "" without one


def tui_agent_argv() -> list[str]:
    """``[python, -I, -S, cli_fork_client.py, SOCKET]``, or ``python -m tui_agent`` without a server."""
    if "" not in _started:
        _started[""] = _start([]) or ""
    if not _started[""]:
        return list(PLAIN)
    return [sys.executable, "-I", "-S", str(HERE / "cli_fork_client.py"), _started[""]]


def ask_process(vault: Path, *args: str) -> subprocess.Popen[str]:
    """``tui-agent ask --vault VAULT ARGS`` started (forked), its output read as text."""
    return subprocess.Popen(
        [*tui_agent_argv(), "ask", "--vault", str(vault), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def script_argv(script: Path, *modules: str) -> list[str]:
    """The command line of ``python SCRIPT``, run by a fork of a server that has imported the
    script's modules and ``modules`` (what it imports later, as it runs). The server starts without
    the variables that change how an interpreter starts (``PYTHON*``, ``LANG``, ``LC_*``), as a
    program started by an MCP client with its safe environment would: a run whose environment has
    them is not forked but started as ``python SCRIPT``. The server runs the script's top level once
    under another name than ``__main__``: its work must be under ``if __name__ == "__main__"``."""
    key = str(script)
    if key not in _started:
        _started[key] = _start(["--script", key, *modules], plain_environment=True) or ""
    if not _started[key]:
        return [sys.executable, key]
    return [sys.executable, "-I", "-S", str(HERE / "cli_fork_client.py"), _started[key], "--script", key]


def without_startup_variables() -> dict[str, str]:
    """This environment without what changes how Python starts (``PYTHON*``, ``LANG``, ``LC_*``,
    as cli_fork_server.STARTUP_PREFIXES): a program run with it by ``script_argv`` is forked."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LANG", "LC_"))}


def _start(options: list[str], plain_environment: bool = False) -> str | None:
    folder = tempfile.mkdtemp(prefix="tui-fork-")
    path = os.path.join(folder, "s")
    env = without_startup_variables() if plain_environment else dict(os.environ)
    server = subprocess.Popen(
        [sys.executable, str(HERE / "cli_fork_server.py"), path, *options],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=folder,
        env=env,
        text=True,
    )
    assert server.stdout is not None
    # A program whose top level blocks (its work not under `if __name__ == "__main__"`) never gets
    # ready: its runs are then started as they would be without a server.
    ready, _, _ = select.select([server.stdout], [], [], READY_S)
    if not ready or server.stdout.readline().strip() != "ready":
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
