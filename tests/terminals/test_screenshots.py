"""The real app in a real Sixel terminal (xterm -ti vt340 under Xvfb), via bench/screenshots.py.

Slow (about a minute, marked ``slow``): ``pytest -m "not slow"`` leaves it out. In the screenshots with the
picture, tens of thousands of pixels have colours the text-only start screen never shows
(``screenshots.picture_pixels``); an empty box or a missing image adds none. The area, not the number
of colours: how many Sixel registers a stand-in picture quantises to depends on the picture (a
CI run saw 135 new colours where another picture gives 250), its area does not.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from PIL import Image
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import screenshots

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

    text_only = Image.open(out / "xterm-1-start.png")
    for name, share in (
        ("xterm-2-carousel.png", 0.05),
        ("xterm-4-full-size.png", 0.3),
        ("xterm-8-resized-small.png", 0.03),
    ):
        shot = Image.open(out / name)
        area = screenshots.picture_pixels(shot, text_only)
        assert area > share * shot.width * shot.height, f"{name}: the picture is not on screen\n{result.stdout}"
    assert screenshots.picture_pixels(text_only, text_only) == 0
