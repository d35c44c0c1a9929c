"""Screenshots of the real app in real terminals under Xvfb: xterm (Sixel, vt340, 256 registers),
mlterm (Sixel), kitty (Debian's 0.26.5, software GL) and tmux inside xterm.

Each terminal gets a fresh vault whose profile points at a loopback scripted model; the app runs
``/imagine PHOTO ...`` (the fake flux2 in tests/bin draws a detailed picture), then the script
takes PNGs: the carousel, after the carousel's next button, the full-size screen and its next
image, the chat after it closed and after the command palette closed, after resizes, and after
more messages scrolled the picture partly away. Look at every PNG.

    python bench/screenshots.py [--out DIR] [--only xterm,mlterm,kitty,tmux]

Needs: apt-get install xvfb xterm mlterm kitty tmux xdotool
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageChops, ImageGrab

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
BIN = Path(sys.executable).parent  # this venv's tui-agent (a throwaway venv tries another textual-image)
TOOLS = ("Xvfb", "xterm", "xdotool")
FONT = ["-fa", "DejaVu Sans Mono", "-fs", "10"]


def missing_tools(terminals: list[str]) -> list[str]:
    needed = set(TOOLS) | {t for t in terminals if t != "tmux"}
    if "tmux" in terminals:
        needed.add("tmux")
    return sorted(t for t in needed if shutil.which(t) is None)


def make_vault(folder: Path, base_url: str) -> Path:
    """A vault whose active profile talks to the loopback model (the same steps as the tests' env)."""
    from tui_agent.core import profiles
    from tui_agent.core.store.db import open_database
    from tui_agent.core.vault import Vault

    vault = Vault(folder).init()
    db = open_database(vault.db_path)
    profiles.create_profile(
        "shots",
        {
            "base_url": base_url,
            "api_key_env": "",
            "chat_model": "chat-model",
            "vision_model": "vision-model",
            "image_model": "flux2-test",
            "request_timeout_s": 30,
        },
    )
    profiles.use_profile("shots")
    db.close()
    return folder


def free_display() -> int:
    """Other sessions on this machine run their own Xvfb: take a number nobody holds."""
    for number in range(150, 400):
        if not Path(f"/tmp/.X{number}-lock").exists() and not Path(f"/tmp/.X11-unix/X{number}").exists():
            return number
    raise RuntimeError("no free X display number")


class Display:
    def __init__(self, number: int) -> None:
        self.name = f":{number}"
        self.proc = subprocess.Popen(
            ["Xvfb", self.name, "-screen", "0", "1400x900x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.env = {**os.environ, "DISPLAY": self.name}
        for _ in range(100):
            if subprocess.run(["xdotool", "getmouselocation"], env=self.env, capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("Xvfb did not start")

    def grab(self) -> Image.Image:
        """The whole screen, in this process (Pillow's X11 grab): a tenth of ImageMagick's time."""
        return ImageGrab.grab(xdisplay=self.name).convert("RGB")

    def shot(self, path: Path) -> None:
        self.grab().save(path)

    def keys(self, *keys: str) -> None:
        # No window manager: the keyboard goes to the window under the pointer.
        subprocess.run(["xdotool", "mousemove", "400", "300"], env=self.env, check=True)
        for key in keys:
            subprocess.run(["xdotool", "key", "--clearmodifiers", key], env=self.env, check=True)
            time.sleep(0.3)

    def type(self, text: str) -> None:
        subprocess.run(["xdotool", "mousemove", "400", "300"], env=self.env, check=True)
        subprocess.run(["xdotool", "type", "--delay", "30", text], env=self.env, check=True)

    def resize_active(self, width: int, height: int) -> None:
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--name", "."], env=self.env, capture_output=True, text=True
        ).stdout.split()
        for window in found:
            subprocess.run(["xdotool", "windowsize", window, str(width), str(height)], env=self.env)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def app_command(vault: Path) -> list[str]:
    return [str(BIN / "tui-agent"), "--vault", str(vault)]


def terminal_command(name: str, vault: Path, workdir: Path) -> list[str]:
    app = " ".join(app_command(vault))
    geometry = ["-geometry", "150x46+0+0"]
    if name == "xterm":
        return [
            "xterm", "-ti", "vt340", "-xrm", "XTerm*decTerminalID: vt340", "-xrm",
            "XTerm*numColorRegisters: 256", *FONT, *geometry, "-e", app,
        ]  # fmt: skip
    if name == "mlterm":
        return ["mlterm", "--geometry", "150x46+0+0", "-w", "13", "-e", *app_command(vault)]
    if name == "kitty":
        return [
            "kitty", "--config", "NONE", "-o", "font_size=10", "-o", "initial_window_width=150c", "-o",
            "initial_window_height=46c", "-o", "remember_window_size=no", *app_command(vault),
        ]  # fmt: skip
    if name == "tmux":
        conf = workdir / "tmux.conf"
        conf.write_text("set -g allow-passthrough on\nset -g status on\nset -sg escape-time 10\n")
        inner = f"tmux -L shots -f {conf} new-session {app}"
        return [
            "xterm", "-ti", "vt340", "-xrm", "XTerm*decTerminalID: vt340", "-xrm",
            "XTerm*numColorRegisters: 256", *FONT, *geometry, "-e", inner,
        ]  # fmt: skip
    raise ValueError(name)


CURSOR_PIXELS = 2 * 10 * 20  # two cells of the 10-point font: a blinking cursor is not a change


PICTURE_PIXELS = 40_000  # about 3% of the 1400x900 screen: the smallest thumbnail covers twice that


def picture_pixels(image: Image.Image, text_only: Image.Image) -> int:
    """How many pixels of ``image`` have a colour the text-only screen ``text_only`` never shows.

    Text, borders and the cursor reuse the start screen's few hundred colours; a picture brings its
    own over tens of thousands of pixels. Counting the area, not the colours, does not depend on
    how many registers a terminal's Sixel palette gave the picture (one stand-in picture quantises
    to 130 colours, another to 250), so a picture is told from an empty box whatever it shows."""
    known = {colour for _, colour in image_colours(text_only)}
    return sum(count for count, colour in image_colours(image) if colour not in known)


def image_colours(image: Image.Image) -> list[tuple[int, tuple[int, int, int]]]:
    return image.convert("RGB").getcolors(1 << 24) or []


def differing(image: Image.Image, other: Image.Image | None) -> int:
    """How many pixels of two grabs differ (all of them if there is no other of the same size)."""
    if other is None or other.size != image.size:
        return image.width * image.height
    histogram = ImageChops.difference(image, other).convert("L").histogram()
    return image.width * image.height - histogram[0]


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def replies(vault: Path) -> int:
    """The finished replies in the vault's conversations (read-only: the app holds the database)."""
    try:
        conn = sqlite3.connect(f"file:{vault / 'agent.db'}?mode=ro", uri=True, timeout=5)
        try:
            found = conn.execute("SELECT count(*) FROM messages WHERE role = 'assistant' AND status = 'complete'")
            return int(found.fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0  # not there yet, or busy: asked again


def run_terminal(name: str, display: Display, out: Path, base_url: str) -> list[Path]:
    workdir = Path(tempfile.mkdtemp(prefix=f"shots-{name}-"))
    vault = make_vault(workdir / "vault", base_url)
    env = {
        **display.env,
        "PATH": f"{TESTS / 'bin'}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "LIBGL_ALWAYS_SOFTWARE": "1",
        "XDG_CACHE_HOME": str(workdir / "cache"),
    }
    env.pop("TMUX", None)
    terminal = subprocess.Popen(
        terminal_command(name, vault, workdir),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "terminal.log", "w"),
    )
    shots: list[Path] = []
    log = vault / "logs"

    def logged(text: str) -> bool:
        return any(text in p.read_text(errors="replace") for p in log.glob("*.log*")) if log.is_dir() else False

    baseline: list[Image.Image] = []  # the text-only start screen
    last: list[Image.Image | None] = [None]  # the last grab that settled

    def settle(path: Path, picture: bool = False, timeout: float = 25.0, new: bool = True) -> Image.Image:
        """Wait until the screen has changed from the last settled grab (what a key or a resize
        does), then until it stops changing (and, for ``picture``, shows the image); the colours.

        A loaded machine draws late: a fixed sleep photographs half-drawn screens, or the screen
        before the key. Two consecutive grabs alike but for a blinking cursor mean the terminal has
        settled; a picture covers tens of thousands of pixels in colours the text-only start screen
        never shows (``picture_pixels``). After
        ``timeout`` the last grab is kept as it is (a step that changes nothing waits that long;
        ``new=False``: the screen may be the last settled one). Returns the grab kept."""
        started = deadline = time.monotonic()
        deadline += timeout
        previous: Image.Image | None = None
        while True:
            pixels = display.grab()
            changed = not new or differing(pixels, last[0]) > CURSOR_PIXELS
            area = picture_pixels(pixels, baseline[0]) if picture and baseline else 0
            shown = not picture or not baseline or area > PICTURE_PIXELS
            if changed and shown and differing(pixels, previous) <= CURSOR_PIXELS:
                break
            if time.monotonic() > deadline:
                print(f"{path.name}: did not settle within {timeout:g} s (kept as it is)")
                break
            previous = pixels
            time.sleep(0.8)
        print(f"{path.name}: {time.monotonic() - started:.1f} s")
        pixels.save(path)
        last[0] = pixels
        if picture:
            print(f"{path.name}: picture area {area} px")
        return pixels

    def shot(label: str, picture: bool = False, new: bool = True) -> None:
        path = out / f"{name}-{label}.png"
        pixels = settle(path, picture, new=new)
        if not baseline:
            baseline.append(pixels)
        shots.append(path)

    def settle_unsaved() -> None:
        settle(workdir / "between.png")

    try:
        wait_for(lambda: logged("chat screen ready"), 60)
        shot("1-start")
        display.type("/imagine PHOTO a fox in the snow")
        display.keys("Return")
        wait_for(lambda: logged("model switched"), 60)
        shot("2-carousel", picture=True)
        display.keys("shift+Tab", "Right")  # the carousel (one Shift+Tab from the composer), next picture
        shot("3-after-next", picture=True)
        display.keys("o")  # the focused carousel's "open full size" (F3 does the same from anywhere)
        shot("4-full-size", picture=True)
        display.keys("Right")
        shot("5-full-size-next", picture=True)
        display.keys("Escape")
        shot("6-back-in-chat", picture=True)
        display.keys("ctrl+p")
        settle_unsaved()  # the palette is open
        display.keys("Escape")
        shot("7-after-palette", picture=True)
        display.resize_active(1000, 600)
        shot("8-resized-small", picture=True)
        display.resize_active(1380, 880)
        shot("9-resized-big", picture=True)
        # back to the composer (the carousel's button has the focus): click into it
        subprocess.run(["xdotool", "mousemove", "300", "820", "click", "1"], env=display.env, check=True)
        for n in range(3):  # a longer chat: the picture scrolls partly off the top
            before = replies(vault)
            display.type(f"and now something else, number {n + 1}")
            display.keys("Return")
            wait_for(lambda before=before: replies(vault) > before, 60)  # the reply is stored
            settle_unsaved()  # and drawn
        shot("10-scrolled", new=False)  # as the last reply left it
    finally:
        display.keys("ctrl+q")
        try:
            terminal.wait(10)
        except subprocess.TimeoutExpired:
            terminal.kill()
            terminal.wait()
        if name == "tmux":
            subprocess.run(["tmux", "-L", "shots", "kill-server"], capture_output=True)
        for line in (vault / "logs").glob("*.log*"):
            for text in line.read_text(errors="replace").splitlines():
                if "image protocol" in text:
                    print(f"{name}: {text.strip()}")
        if (vault / "logs").is_dir():  # the app's own log, next to its screenshots
            shutil.copytree(vault / "logs", out / f"{name}-logs", dirs_exist_ok=True)
        if (workdir / "terminal.log").is_file():  # and the terminal's (what it said on stderr)
            shutil.copy(workdir / "terminal.log", out / f"{name}-terminal.log")
        shutil.rmtree(workdir, ignore_errors=True)  # the vault, the cache, the terminal's log
    return shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/screenshots"))
    parser.add_argument("--only", default="xterm,mlterm,kitty,tmux")
    parser.add_argument("--display", type=int, default=0, help="X display number (default: a free one)")
    options = parser.parse_args(argv)
    terminals = [t for t in options.only.split(",") if t]
    missing = missing_tools(terminals)
    if missing:
        print(f"missing: {', '.join(missing)} (apt-get install xvfb xterm mlterm kitty tmux xdotool)")
        return 2
    sys.path.insert(0, str(TESTS))
    from fake_openai import FakeOpenAI

    options.out.mkdir(parents=True, exist_ok=True)
    fake = FakeOpenAI().start()
    fake.default_text = "Two foxes in the snow: one looking left, one curled up."
    try:
        for name in terminals:
            # A fresh X server per terminal: no pixels left over from the previous one.
            display = Display(options.display or free_display())
            try:
                for path in run_terminal(name, display, options.out, fake.base_url):
                    print(path)
            finally:
                display.close()
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
