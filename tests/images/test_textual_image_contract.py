"""What the app relies on in textual-image, proven against the installed version (issue 28, item 3).

No private name of textual-image is used anywhere in ``tui_agent`` (the first test reads the
source). Three public behaviours are relied on (see tui_agent/ui/images.py and sixel_widget.py);
each test below fails with a message that names the textual-image version and what changed, so an
upgrade that breaks one is caught here before it reaches a terminal:

1. imported while ``sys.__stdout__`` is not a terminal, it writes nothing to the terminal (no probe);
2. with no terminal to ask, it takes the cell size from ``TEXTUAL_CELL_WIDTH`` / ``_HEIGHT``;
3. its public ``SixelImage`` widget can be subclassed the way it declares its own widgets
   (``Renderable=``), and its ``compose()`` decides what draws the picture.

Run with another textual-image installed (a throwaway venv) before raising the pin.
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from PIL import Image
from repo_paths import ROOT
from textual.app import App, ComposeResult

UPGRADE = f"textual-image {version('textual-image')} changed"


def private_uses(path: Path) -> list[str]:
    """``textual_image`` names with a leading underscore that ``path`` imports or reaches."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "textual_image":
            names = [alias.name for alias in node.names]
            if any(part.startswith("_") for part in [*(node.module or "").split("."), *names]):
                found.append(f"{path.name}:{node.lineno} from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "textual_image" and any(p.startswith("_") for p in parts):
                    found.append(f"{path.name}:{node.lineno} import {alias.name}")
    return found


def test_the_app_uses_no_private_name_of_textual_image():
    found = [use for path in sorted((ROOT / "tui_agent").rglob("*.py")) for use in private_uses(path)]
    assert found == [], "private textual-image names (use its public API, or prove the use here):\n" + "\n".join(found)


CHILD = """
import json, sys
from tui_agent.ui import images
from tui_agent.ui.terminal_probe import Probe

images._probe = Probe("sixel", "test", cell=(9, 19))  # as if the app's own probe had run
images.load_textual_image()
import io, os
from PIL import Image
from rich.console import Console
from textual_image.renderable import SixelImage

out = io.StringIO()
Console(file=out, force_terminal=True, width=80).print(SixelImage(Image.new("RGB", (50, 50), "red"), width=3, height=2))
text = out.getvalue()
raster = text[text.index('"1;1;') + 5 :].split("#")[0].split(";")[:2]
leftover = [name for name in ("TEXTUAL_CELL_WIDTH", "TEXTUAL_CELL_HEIGHT") if name in os.environ]
print(json.dumps({"raster": [int(v) for v in raster], "leftover": leftover}), file=sys.stderr)
"""


@pytest.mark.slow
def test_loaded_in_a_terminal_it_asks_nothing_and_takes_our_cell_size(tmp_path):
    """The app loads textual-image while it runs in a terminal: not one byte may reach the terminal
    (its probe's queries would be answered into the app's keyboard stream), and it must take the
    cell size the app measured: 9x19 px here, so a 3x2-cell picture is 27x38 pixels."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # no pixel size: it would ask
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL_CELL", "TMUX"))}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=environment | {"TERM": "xterm-256color"},
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    written = b""
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.1)[0]:
            try:
                written += os.read(master, 4096)
            except OSError:
                break
    _, errors = child.communicate(timeout=60)
    os.close(master)
    assert child.returncode == 0, errors.decode()
    assert written == b"", (
        f"{UPGRADE} its import: it wrote {written!r} to the terminal (it probes despite the stand-in stdout)"
    )
    result = json.loads(errors.decode().strip().splitlines()[-1])
    assert result["raster"] == [27, 38], (
        f"{UPGRADE} where its cell size comes from: a 3x2-cell picture is {result['raster']} px, not 27x38 "
        "(TEXTUAL_CELL_WIDTH/HEIGHT with no terminal to ask)"
    )
    assert result["leftover"] == [], "the cell-size variables must not outlive the import"


async def test_our_sixel_widget_is_its_public_sixel_widget_drawing_through_our_child(tmp_path):
    from textual_image.widget import SixelImage

    from tui_agent.ui.images import load_textual_image
    from tui_agent.ui.sixel_widget import NoDrawing, sixel_image_class

    load_textual_image()
    picture = tmp_path / "p.png"
    Image.new("RGB", (40, 40), (200, 10, 10)).save(picture)
    widget_class = sixel_image_class(256, False, lambda: (10, 20))
    assert issubclass(widget_class, SixelImage)

    class Shows(App[None]):
        def compose(self) -> ComposeResult:
            widget = widget_class(str(picture))
            widget.styles.width, widget.styles.height = 4, 2
            yield widget

    app = Shows()
    async with app.run_test(size=(20, 6)) as pilot:
        await pilot.pause()
        widget = app.query_one(widget_class)
        assert widget.image == str(picture), f"{UPGRADE} SixelImage.image: it no longer returns the image given"
        children = list(widget.children)
        assert [type(c).__name__ for c in children] == ["SixelCells"], (
            f"{UPGRADE} SixelImage: its compose() is no longer what draws the picture ({children})"
        )
        assert isinstance(widget.render(), NoDrawing), f"{UPGRADE} the Renderable= a widget class declares"
        assert children[0].size == (4, 2)
        text = "".join(s.text for strip in children[0].render_lines(children[0].region.reset_offset) for s in strip)
        assert '\x1bP0;1;0q"1;1;40;36' in text  # 4x2 cells of 10x20 px, cut to whole six-pixel bands
