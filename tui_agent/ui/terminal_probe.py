"""Which image protocol the terminal speaks, asked once before the app reads the keyboard.

One write of several queries, answered in order; DA1 (``ESC [ c``) goes last because every
terminal answers it, so its reply ends the wait (a timeout only matters for a silent terminal):

- XTVERSION (``ESC [ > 0 q``): the terminal's name and version (kitty's Unicode placeholders
  need 0.28; older kittys get direct placement);
- XTSMGRAPHICS (``ESC [ ? 1 ; 1 ; 0 S``): how many Sixel colour registers there are;
- the kitty graphics query (APC), never sent raw inside tmux (tmux takes an APC string as the
  pane title);
- ``ESC [ 16 t``: the cell size in pixels when the tty does not report it.

Inside tmux the queries go through DCS passthrough when ``allow-passthrough`` is on; when it is
off the images are half-cells. ``TUI_AGENT_IMAGES`` skips the protocol guess entirely.

The cell size inside tmux is the attached client's (``#{client_cell_width}``): the pane's own
pixel size is tmux's default (16x32) in a session started detached, and images drawn by it came
out twice too large. ``cell_now`` is asked again at every resize (an attach resizes the window).
"""

from __future__ import annotations

import logging
import os
import re
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

log = logging.getLogger("tui_agent.ui.images")

IMAGE_ENV = "TUI_AGENT_IMAGES"
# Set by ``tui-agent serve`` for each app process: the page's cell size in CSS pixels ("9.63x19").
CELL_ENV = "TUI_AGENT_CELL_PX"
CHOICES = ("auto", "halfcell", "sixel", "kitty", "kitty-direct", "unicode")
FIRST_TIMEOUT_S = 2.0
TIMEOUT_S = 1.0
KITTY_QUERY = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
_DA1 = re.compile(r"\x1b\[\?([\d;]*)c")
_XTVERSION = re.compile(r"\x1bP>\|([^\x1b]*)\x1b\\")
_REGISTERS = re.compile(r"\x1b\[\?1;0;(\d+)S")
_CELL = re.compile(r"\x1b\[6;(\d+);(\d+)t")
_KITTY_OK = re.compile(r"\x1b_Gi=31;OK\x1b\\")
_KITTY_VERSION = re.compile(r"kitty\((\d+)\.(\d+)")


@dataclass
class Probe:
    protocol: str  # sixel, kitty, kitty-direct, halfcell, unicode, web-sixel (our page's image addon)
    reason: str
    colors: int = 256
    cell: tuple[int, int] = (10, 20)
    tmux: bool = False  # wrap graphics in tmux's DCS passthrough

    def describe(self) -> str:
        extra = f", {self.colors} colour registers" if self.protocol in ("sixel", "web-sixel") else ""
        through = ", through tmux passthrough" if self.tmux else ""
        return f"image protocol: {self.protocol} ({self.reason}{extra}{through}; cell {self.cell[0]}x{self.cell[1]} px)"


def tmux_wrap(sequence: str) -> str:
    """DCS passthrough for tmux (``allow-passthrough on``): every ESC inside is doubled. The one
    wrapping function of the app: Sixel pictures (``sixel_widget``) and OSC 52 (``clipboard``)."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def served_probe(choice: str) -> Probe:
    """Served by ``tui-agent serve``: its page has xterm.js's image addon and sent its cell size.

    One Sixel pixel is one CSS pixel there; the cell size is rounded down so a picture never
    needs more cells than it was given. Without a cell size (another server's page, e.g. plain
    ``textual serve``) the terminal has no graphics: half-cells.
    """
    raw = os.environ.get(CELL_ENV, "")
    width, _, height = raw.partition("x")
    try:
        cell = (int(float(width)), int(float(height)))
    except ValueError:
        cell = (0, 0)
    if choice != "auto":
        return Probe(choice, f"{IMAGE_ENV}={choice}, served in a browser", cell=cell if min(cell) > 0 else (10, 20))
    if min(cell) <= 0:
        return Probe("halfcell", "served in a browser without tui-agent's page (no image addon)")
    return Probe("web-sixel", "served in a browser: xterm.js image addon", 256, cell)


def tmux_passthrough_allowed() -> bool:
    tmux = shutil.which("tmux")
    if tmux is None:
        return False
    try:
        out = subprocess.run(
            [tmux, "display-message", "-p", "#{allow-passthrough}"], capture_output=True, text=True, timeout=2
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out in ("on", "1", "all")


def tmux_client_terminal() -> str:
    """What tmux learnt about the outer terminal (XTVERSION name, then its terminal type)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return ""
    try:
        return subprocess.run(
            [tmux, "display-message", "-p", "#{client_termtype} #{client_termname} #{client_termfeatures}"],
            capture_output=True,
            text=True,
            timeout=2,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def tmux_client_cell() -> tuple[int, int] | None:
    """The cell size in pixels of the tmux client showing this pane (None: none attached)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    try:
        out = subprocess.run(
            [tmux, "display-message", "-p", "#{client_cell_width} #{client_cell_height}"],
            capture_output=True,
            text=True,
            timeout=2,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) == 2 and all(part.isdigit() and int(part) > 0 for part in out):
        return int(out[0]), int(out[1])
    return None


def cell_now() -> tuple[int, int] | None:
    """The terminal's cell size in pixels now: tmux's client's inside tmux, else the tty's."""
    if os.environ.get("TMUX") and (cell := tmux_client_cell()) is not None:
        return cell
    return _tty_cell()


def parse(replies: str, *, in_tmux: bool = False, passthrough: bool = False, outer: str = "") -> Probe:
    """The choice made from the terminal's replies (pure: tested with recorded replies)."""
    colors = 256
    if match := _REGISTERS.search(replies):
        colors = max(2, min(256, int(match.group(1))))
    cell = (10, 20)
    if match := _CELL.search(replies):
        cell = (int(match.group(2)), int(match.group(1)))
    version = _XTVERSION.search(replies)
    name = version.group(1) if version else ""
    da1 = _DA1.search(replies)
    if in_tmux and not passthrough:
        return Probe("halfcell", "tmux without allow-passthrough", colors, cell)
    if in_tmux:
        # tmux answers DA1 itself; what it knows of the outer terminal decides.
        if "sixel" in outer.lower() or "xterm" in outer.lower() or "mlterm" in outer.lower():
            return Probe(
                "sixel", f"tmux passthrough to {outer.split()[0] if outer else 'a sixel terminal'}", colors, cell, True
            )
        return Probe(
            "halfcell", f"tmux passthrough on, outer terminal {outer or 'unknown'} has no known graphics", colors, cell
        )
    if da1 and "4" in da1.group(1).split(";"):
        return Probe("sixel", f"DA1 reply {da1.group(1)}", colors, cell)
    if _KITTY_OK.search(replies):
        kitty = _KITTY_VERSION.search(name)
        if kitty and (int(kitty.group(1)), int(kitty.group(2))) < (0, 28):
            return Probe("kitty-direct", f"kitty graphics reply OK, {name}: no Unicode placeholders", colors, cell)
        return Probe("kitty", f"kitty graphics reply OK{', ' + name if name else ''}", colors, cell)
    if da1:
        return Probe("halfcell", f"DA1 reply {da1.group(1)}: no Sixel, no kitty graphics", colors, cell)
    return Probe("halfcell", "no reply to the terminal queries", colors, cell)


def _read_replies(fd_in: int, fd_out: int, queries: str, timeout: float) -> str:
    import termios
    import tty

    saved = termios.tcgetattr(fd_in)
    data = b""
    try:
        tty.setcbreak(fd_in, termios.TCSANOW)
        new = termios.tcgetattr(fd_in)
        new[3] &= ~termios.ECHO
        termios.tcsetattr(fd_in, termios.TCSANOW, new)
        os.write(fd_out, queries.encode())
        deadline = time.monotonic() + timeout
        while not _DA1.search(data.decode("latin-1")):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([fd_in], [], [], left)
            if not ready:
                break
            data += os.read(fd_in, 4096)
    finally:
        termios.tcsetattr(fd_in, termios.TCSAFLUSH, saved)
    return data.decode("latin-1")


def _tty_cell() -> tuple[int, int] | None:
    import fcntl
    import struct
    import termios

    try:
        raw = fcntl.ioctl(sys.__stdout__.fileno(), termios.TIOCGWINSZ, b"\0" * 8)  # type: ignore[union-attr]
    except (OSError, ValueError):
        return None
    rows, cols, width, height = struct.unpack("HHHH", raw)
    if rows and cols and width and height:
        return width // cols, height // rows
    return None


def served_in_browser() -> bool:
    """Run by textual-serve (it sets TERM_PROGRAM) or by ``tui-agent serve``: the terminal is a page."""
    return os.environ.get("TERM_PROGRAM") == "textual" or os.environ.get("TUI_AGENT_SERVED") == "1"


def forget_stale_size() -> list[str]:
    """Drop ``COLUMNS`` and ``LINES`` from the environment when the app draws in a real terminal;
    the names dropped.

    Textual's terminal driver asks ``shutil.get_terminal_size()``, which prefers those variables to
    the terminal's own size, on start and on every resize: a value exported by a shell profile, or
    set by GNU readline in whatever process started the terminal (pytest's, for one: a whole test
    run's xterm screenshots were drawn 80 columns wide in a 150-column window), pinned the app to
    that width and made it ignore every resize. In a browser (textual-serve, ``tui-agent serve``)
    they are the page's size, which the web driver reads: kept there."""
    if served_in_browser():
        return []
    stdout = sys.__stdout__
    if stdout is None or not stdout.isatty():
        return []
    dropped = [name for name in ("COLUMNS", "LINES") if os.environ.pop(name, None) is not None]
    if dropped:
        log.info("%s in the environment ignored: the terminal's own size is used", " and ".join(dropped))
    return dropped


def probe(first_run: bool = False) -> Probe:
    """Ask the terminal (only when stdin and stdout are a tty); never after the first paint."""
    choice = (os.environ.get(IMAGE_ENV) or "auto").lower()
    if choice not in CHOICES:
        log.warning("%s=%s is not one of %s: using auto", IMAGE_ENV, choice, ", ".join(CHOICES))
        choice = "auto"
    if served_in_browser():
        return served_probe(choice)
    stdin, stdout = sys.__stdin__, sys.__stdout__
    if stdin is None or stdout is None or not stdin.isatty() or not stdout.isatty():
        return Probe("unicode" if choice == "auto" else choice, "not a terminal")
    in_tmux = bool(os.environ.get("TMUX"))
    passthrough = in_tmux and tmux_passthrough_allowed()
    queries = "\x1b[>0q\x1b[?1;1;0S"
    if not in_tmux:
        queries += KITTY_QUERY
    cell = cell_now()
    if cell is None:
        queries += "\x1b[16t"
    queries += "\x1b[c"
    started = time.monotonic()
    try:
        replies = _read_replies(stdin.fileno(), stdout.fileno(), queries, FIRST_TIMEOUT_S if first_run else TIMEOUT_S)
    except OSError as exc:
        replies = ""
        log.warning("terminal probe failed: %s", exc)
    result = parse(
        replies, in_tmux=in_tmux, passthrough=passthrough, outer=tmux_client_terminal() if passthrough else ""
    )
    if cell is not None:
        result.cell = cell
    if choice == "kitty" and result.protocol == "kitty-direct":
        result.reason = f"{IMAGE_ENV}=kitty; {result.reason}"  # forced kitty still needs direct placement
    elif choice != "auto":
        # Forced Sixel inside tmux goes through its passthrough even when the outer terminal is not
        # known yet (a session started detached): unwrapped, tmux drops it.
        wrap = (result.tmux or passthrough) and choice == "sixel"
        result = Probe(choice, f"{IMAGE_ENV}={choice}", result.colors, result.cell, wrap)
    log.debug("terminal replies after %.2f s: %r", time.monotonic() - started, replies)
    return result
