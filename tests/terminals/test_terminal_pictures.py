"""Sixel pictures in real terminals are drawn only where their widget is and leave nothing behind
(issue 37 item 2): xterm (-ti vt340) under Xvfb, alone and with tmux inside it (allow-passthrough).

The chat holds a picture, an error card right below it and a few replies, so the picture is half
scrolled off the top. PageUp then End comes back to the very same scroll position: the screen must
be the same as before the keys, pixel for pixel but for the blinking text cursor. Before the fix, strips of the picture stayed over
the carousel's row and the card below (cells that were blank under the picture and blank again were
never written: tmux, and Textual, write a cell only when it changed, and only a written cell loses
the picture's pixels).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from fake_openai import Reply
from PIL import Image, ImageChops
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import screenshots

pytestmark = pytest.mark.slow

CURSOR_PIXELS = 160  # one cell of DejaVu Sans Mono at 10 points, and a little
TOOLS = ("Xvfb", "xterm", "xdotool", "tmux")


def settled(display: screenshots.Display, path: Path, timeout: float = 30.0) -> Image.Image:
    """The screen once two grabs in a row are the same but for the blinking text cursor (a loaded
    machine draws late); kept in ``path``."""
    deadline = time.monotonic() + timeout
    previous: Image.Image | None = None
    while True:
        image = display.grab()
        if screenshots.differing(image, previous) <= CURSOR_PIXELS or time.monotonic() > deadline:
            image.save(path)
            return image
        previous = image
        time.sleep(1.0)


def wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return bool(condition())


@pytest.mark.parametrize("terminal", ["xterm", "tmux"])
def test_pageup_then_end_leaves_no_strip_of_a_picture(fake_llm, tmp_path, terminal):
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: apt-get install xvfb xterm xdotool tmux")
    fake = fake_llm
    fake.default_text = "A reply of a few words.\n\n" + "\n".join(f"line {i} of a longer answer" for i in range(6))
    fake.script(Reply(text="Two foxes in the snow."), Reply(status=400, error_message="bad request from the model"))
    display = screenshots.Display(screenshots.free_display())
    workdir = Path(tempfile.mkdtemp(prefix=f"pictures-{terminal}-", dir=tmp_path))
    vault = screenshots.make_vault(workdir / "vault", fake.base_url)
    env = {
        **display.env,
        "PATH": f"{ROOT / 'tests' / 'bin'}{os.pathsep}{screenshots.BIN}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(workdir / "cache"),
    }
    env.pop("TMUX", None)
    command = screenshots.terminal_command(terminal, vault, workdir)
    if terminal == "tmux":  # a server of this test's own, and no status line with a clock in it
        conf = workdir / "tmux.conf"
        conf.write_text("set -g allow-passthrough on\nset -g status off\nset -sg escape-time 10\n")
        socket = f"pictures-{os.getpid()}"
        command[-1] = command[-1].replace("tmux -L shots", f"tmux -L {socket}")
    log = vault / "logs"

    def logged(text: str) -> bool:
        return log.is_dir() and any(text in p.read_text(errors="replace") for p in log.glob("*.log*"))

    shown = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: logged("chat screen ready")), "the app did not start"
        time.sleep(1)
        display.type("/imagine PHOTO a fox in the snow")
        display.keys("Return")
        assert wait_for(lambda: len(fake.chat_requests) >= 1), "no reply after the picture"
        for n, text in enumerate(["this one fails", "and one more", "and another"], start=2):
            settled(display, workdir / "typing.png")
            display.type(text)
            display.keys("Return")
            assert wait_for(lambda n=n: len(fake.chat_requests) >= n), text
        before = settled(display, tmp_path / f"{terminal}-before.png")
        assert len(before.getcolors(1 << 22) or []) > 400, "the picture is not on screen"
        display.keys("Prior")
        settled(display, tmp_path / f"{terminal}-pageup.png")
        display.keys("End")
        after = settled(display, tmp_path / f"{terminal}-after.png")
        # The composer's text cursor blinks: one cell (7x15 pixels here) may differ, a strip of a
        # picture is thousands of pixels.
        changed = ImageChops.difference(before, after).convert("L").point(lambda v: 255 if v else 0)
        count = changed.histogram()[255]
        assert count <= CURSOR_PIXELS, f"{terminal}: {count} pixels differ in {changed.getbbox()} ({tmp_path})"
    finally:
        display.keys("ctrl+q")
        try:
            shown.wait(10)
        except subprocess.TimeoutExpired:
            shown.kill()
            shown.wait()
        if terminal == "tmux":
            subprocess.run(["tmux", "-L", f"pictures-{os.getpid()}", "kill-server"], capture_output=True)
        display.close()
