"""The text guard: whatever a widget holds, its control characters never reach the terminal.

A Textual editor (TextArea, Input) draws its text as it is: with escape sequences in it, a bare
app sets the terminal's title and writes its clipboard. With the guard (installed by the app)
the same widgets draw the text without them. Image data (control segments) keeps its escapes.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from pilot_helpers import eventually
from repo_paths import TESTS
from rich.console import Console
from rich.segment import ControlType, Segment
from rich.style import Style
from tmux_helpers import Tmux, tmux_available

APP = TESTS / "text_guard_app.py"


def test_the_guard_removes_controls_from_text_and_keeps_image_segments():
    from textual.strip import Strip

    from tui_agent.ui import text_guard

    text_guard.install()
    console = Console(color_system="truecolor")
    strip = Strip([Segment("a\x1b]0;T\x07b\x9bc\u202ed", Style(bold=True)), Segment("plain\x1b[2J")])
    out = strip.render(console)
    assert "a]0;Tbcd" in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\x1b]0;" not in out and "\x1b[2J" not in out
    sixel = "\x1bPq#0;2;0;0;0~\x1b\\"
    image = Strip(
        [
            Segment("\x1b[3;5H", Style()),
            Segment(sixel, Style(), control=((ControlType.CURSOR_FORWARD, 0),)),
            Segment("\x1b[9;9H", Style()),
        ]
    )
    assert sixel in image.render(console) and "\x1b[3;5H" in image.render(console)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bare", "guarded"])
def test_an_editor_holding_escapes_writes_nothing_to_the_terminal(tmp_path, mode):
    tmux_available()
    tmux = Tmux(tmp_path)
    tmux.session = "guard"
    try:
        tmux("new-session", "-d", "-s", tmux.session, "-x", "100", "-y", "20", "sleep 600")
        tmux("set-option", "-g", "set-clipboard", "on")
        tmux("set-option", "-g", "allow-rename", "on")
        title = tmux.title()
        tmux("respawn-pane", "-k", "-t", tmux.session, f"TERM=xterm-256color {sys.executable} {APP} {mode}")
        tmux.wait_for("editor")
        if mode == "bare":  # the threat is real: a bare Textual editor acts on them (once its frame is out)
            assert eventually(lambda: tmux.title() != title or tmux.buffers() != "", what="the title or clipboard set")
        else:
            time.sleep(1.0)  # the whole first frame is out
            assert tmux.title() == title and tmux.buffers() == ""
            assert "editor ]0;RAW-TITLE and ]52;c;cHduZWQ= 0;C1-TITLE end-of-text" in tmux.screen()
        subprocess.run(["tmux", "-L", tmux.socket, "send-keys", "-t", tmux.session, "C-q"], timeout=20)
    finally:
        tmux.kill()
