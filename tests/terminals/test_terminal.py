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


def wait_for(session: str, text: str, timeout: float = 20.0) -> str:
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
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode != 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the app did not quit on Ctrl+Q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert env.fake.chat_requests[0]["messages"][-1] == {"role": "user", "content": "hi there"}
