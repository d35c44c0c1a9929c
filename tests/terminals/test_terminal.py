"""The real console script in a real terminal (tmux): send a message, read the reply off the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from fake_openai import Reply

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="needs tmux, a real terminal multiplexer: apt-get install tmux"
    ),
]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def wait_for(session: str, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared on screen:\n{screen}")


def test_console_script_in_tmux(env, tmp_path):
    env.fake.script(Reply(text="Hello from the loopback model!"))
    session = f"tui-agent-test-{os.getpid()}"
    command = f"cd {tmp_path} && TUI_AGENT_VAULT={env.vault.root} TERM=xterm-256color {sys.executable} -m tui_agent"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
    try:
        wait_for(session, "Message (Enter sends")
        tmux("send-keys", "-t", session, "-l", "hi there")
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, "Hello from the loopback model!")
        assert "hi there" in screen
        assert "chat-model" in screen
        tmux("send-keys", "-t", session, "C-q")
        deadline = time.monotonic() + 60  # bounds a hang only: a loaded machine quits slower
        while time.monotonic() < deadline:
            if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode != 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the app did not quit on Ctrl+Q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert env.fake.chat_requests[0]["messages"][-1] == {"role": "user", "content": "hi there"}


def _palette_column(session: str) -> int:
    """Where the footer's last key ("^p palette", drawn at the app's right edge) ends on screen
    (0: no footer yet)."""
    lines = [line for line in tmux("capture-pane", "-p", "-t", session).splitlines() if "palette" in line]
    return lines[-1].rstrip().index("palette") + len("palette") if lines else 0


def test_a_size_left_in_the_environment_does_not_pin_the_app(env, tmp_path):
    """COLUMNS and LINES exported by a shell profile, or set by GNU readline in whatever started
    the terminal (pytest's process does: the xterm screenshots were drawn 80 columns wide in a
    150-column window): Textual's driver preferred them to the terminal's size, on start and on
    every resize. The app fills the terminal and follows it when resized."""
    session = f"tui-agent-size-{os.getpid()}"
    command = (
        f"cd {tmp_path} && COLUMNS=60 LINES=12 TUI_AGENT_VAULT={env.vault.root} TERM=xterm-256color "
        f"{sys.executable} -m tui_agent"
    )
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
    try:
        screen = wait_for(session, "Message (Enter sends")
        assert len(screen.splitlines()) >= 39, screen  # all 40 rows, not 12
        deadline = time.monotonic() + 20
        while _palette_column(session) < 117 and time.monotonic() < deadline:
            time.sleep(0.1)
        screen = tmux("capture-pane", "-p", "-t", session)
        assert 117 <= _palette_column(session) <= 120, screen  # the footer reaches the right edge, not column 60
        tmux("resize-window", "-t", session, "-x", "100", "-y", "30")
        deadline = time.monotonic() + 20
        while not 97 <= _palette_column(session) <= 100 and time.monotonic() < deadline:
            time.sleep(0.1)
        screen = tmux("capture-pane", "-p", "-t", session)
        assert 97 <= _palette_column(session) <= 100, screen  # and follows the terminal when it is resized
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
