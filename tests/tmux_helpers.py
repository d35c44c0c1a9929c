"""A private tmux server for a test (its own socket: its pane title and paste buffers are the test's
alone), to run the real console script in a real terminal and read the screen back."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def tmux_available() -> None:
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux: apt-get install tmux")


class Tmux:
    """A private tmux server (own socket): its title and buffers are ours alone."""

    def __init__(self, tmp_path: Path) -> None:
        self.socket = f"polish-{os.getpid()}-{time.monotonic_ns()}"
        self.session = "escape-test"

    def __call__(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, timeout=20
        ).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.session)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared on screen:\n{screen}")

    def title(self) -> str:
        return self("display-message", "-p", "-t", self.session, "#{pane_title}").strip()

    def buffers(self) -> str:
        return self("list-buffers")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)
        socket = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}" / self.socket
        socket.unlink(missing_ok=True)


def quit_app(tmux: Tmux) -> None:
    tmux("send-keys", "-t", tmux.session, "C-q")
    deadline = time.monotonic() + 60  # bounds a hang only: a loaded machine quits slower
    while time.monotonic() < deadline:
        if subprocess.run(
            ["tmux", "-L", tmux.socket, "has-session", "-t", tmux.session], capture_output=True
        ).returncode:
            return
        time.sleep(0.2)
    raise AssertionError("the app did not quit on Ctrl+Q")
