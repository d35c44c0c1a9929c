"""Images follow the cell size of the tmux client, not the one tmux had before any client was
attached (issue 25, item 6): the app runs in a session started detached, then a client with a
9x19-pixel cell attaches (a pty that reports its pixel size, as xterm's does)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
import uuid

import pytest
from pilot_helpers import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: apt-get install tmux"),
]


def test_the_cell_size_follows_the_client_that_attaches(env, tmp_path):
    socket = f"chatui-cell-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    log_file = env.vault.log_file
    command = (
        f"cd {tmp_path} && TUI_AGENT_VAULT={env.vault.root} TUI_AGENT_IMAGES=sixel TERM=xterm-256color "
        f"{sys.executable} -m tui_agent"
    )
    environment = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "s", "-x", "100", "-y", "30", command], check=True, env=environment
    )
    master, slave = pty.openpty()
    client = None
    try:
        started = eventually(lambda: re.search(r"image protocol: .*cell (\d+)x(\d+) px", log_text(log_file)))
        assert started, log_text(log_file)
        detached = (int(started.group(1)), int(started.group(2)))
        # A client whose terminal has 9x19-pixel cells attaches.
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 120 * 9, 40 * 19))
        client = subprocess.Popen(
            [*tmux, "attach", "-t", "s"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment | {"TERM": "xterm-256color"},
            start_new_session=True,
        )
        threading.Thread(target=drain, args=(master,), daemon=True).start()
        shown = eventually(
            lambda: (
                subprocess.run(
                    [*tmux, "display-message", "-p", "-t", "s", "#{client_cell_width}x#{client_cell_height}"],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                == "9x19"
            )
        )
        assert shown, "the tmux client did not attach"
        followed = eventually(lambda: "terminal cell now 9x19 px" in log_text(log_file))
        assert followed, f"started with {detached}; log:\n{log_text(log_file)[-2000:]}"
        assert detached != (9, 19)  # what the app used before (tmux's default for a detached session)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        if client is not None:
            client.wait(timeout=10)
        os.close(master)
        os.close(slave)


def test_forced_sixel_in_a_detached_session_goes_through_tmux_passthrough(env, tmp_path):
    socket = f"chatui-pass-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    command = (
        f"cd {tmp_path} && TUI_AGENT_VAULT={env.vault.root} TUI_AGENT_IMAGES=sixel TERM=xterm-256color "
        f"{sys.executable} -m tui_agent"
    )
    environment = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    # The option first (a session holds the server), then the app's session, detached.
    subprocess.run([*tmux, "new-session", "-d", "-s", "hold", "sleep 60"], check=True, env=environment)
    try:
        subprocess.run([*tmux, "set", "-g", "allow-passthrough", "on"], check=True, env=environment)
        subprocess.run(
            [*tmux, "new-session", "-d", "-s", "s", "-x", "100", "-y", "30", command], check=True, env=environment
        )
        line = eventually(lambda: re.search(r"image protocol: .*", log_text(env.vault.log_file)))
        assert line and "sixel" in line.group(0) and "through tmux passthrough" in line.group(0), line
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def log_text(path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return
