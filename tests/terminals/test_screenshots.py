"""The real app in a real Sixel terminal (xterm -ti vt340 under Xvfb), via bench/screenshots.py.

Slow (about a minute, marked ``slow``): ``pytest -m "not slow"`` leaves it out. The screenshots with the picture
must have well over a hundred colours more than the start screen (text only): the dithered
gradient uses up to 256 registers; an empty box or a missing image adds none.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from PIL import Image
from repo_paths import ROOT

pytestmark = pytest.mark.slow


def test_xterm_shows_the_generated_picture(tmp_path):
    missing = [tool for tool in ("Xvfb", "xterm", "xdotool") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: apt-get install xvfb xterm xdotool")
    out = tmp_path / "shots"
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench/screenshots.py"), "--out", str(out), "--only", "xterm"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "image protocol: sixel (DA1 reply" in result.stdout

    def colours(name: str) -> int:
        return len(Image.open(out / name).convert("RGB").getcolors(1 << 22) or [])

    text_only = colours("xterm-1-start.png")
    for name in ("xterm-2-carousel.png", "xterm-4-full-size.png", "xterm-8-resized-small.png"):
        assert colours(name) > text_only + 150, f"{name}: the picture is not on screen"
