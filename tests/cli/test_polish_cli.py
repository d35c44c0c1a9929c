"""The console script's small edges (issue 11 item 10): closed pipes, empty searches."""

from __future__ import annotations

import shlex
import subprocess
import sys

from cli_fork import tui_agent_argv


def test_profile_show_into_head_exits_quietly(env):
    command = f"{shlex.quote(sys.executable)} -m tui_agent --vault {shlex.quote(str(env.vault.root))} profile show"
    # many lines, so the writer is still writing when head has gone
    for _ in range(3):
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", f"{command} | head -3"], capture_output=True, text=True, timeout=60
        )
        assert result.stdout.splitlines()[0].startswith("name: ")
        assert len(result.stdout.splitlines()) == 3
        assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
        assert result.stderr == ""


def test_a_closed_pipe_is_not_a_traceback(env):
    """The reader is gone before the first write: still no traceback, and 141 like a shell tool."""
    code = (
        "import os, sys\n"
        "r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
        "from tui_agent.cli import main\n"
        f"sys.exit(main(['--vault', {str(env.vault.root)!r}, 'profile', 'show']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 141 and result.stderr == "", result.stderr


def test_history_search_without_hits_says_so(env):
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), "history", "search", "zebra"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == "no messages match 'zebra'"
