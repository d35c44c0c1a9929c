"""Copying text out of the app so that it really arrives, and saying honestly which way it went.

Three ways, all tried:

- OSC 52 to the terminal (also how the browser's clipboard is reached under ``serve``: xterm.js's
  clipboard addon takes it). Inside tmux the sequence is sent twice: plain (tmux keeps it as a
  buffer when ``set-clipboard`` allows) and wrapped for passthrough (reaches the outer terminal
  when ``allow-passthrough`` is on). A terminal never confirms OSC 52, so it is reported as "sent".
- ``tmux load-buffer -w -`` inside tmux: a tmux buffer for certain, and the outer clipboard.
- A system clipboard tool where one exists: ``wl-copy``, ``xclip``, ``xsel``, ``pbcopy``.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from tui_agent.core.textsafe import clipboard_text
from tui_agent.ui.terminal_probe import tmux_wrap

TOOL_TIMEOUT_S = 3.0


def osc52(text: str) -> str:
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\a"


def in_tmux(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("TMUX"))


def system_tools(environ: dict[str, str] | None = None) -> list[tuple[str, list[str]]]:
    """(name, argv) of the clipboard tools that can work here, best first."""
    env = os.environ if environ is None else environ
    candidates: list[tuple[str, list[str]]] = []
    if sys.platform == "darwin":
        candidates.append(("pbcopy", ["pbcopy"]))
    if env.get("WAYLAND_DISPLAY"):
        candidates.append(("wl-copy", ["wl-copy"]))
    if env.get("DISPLAY"):
        candidates.append(("xclip", ["xclip", "-selection", "clipboard", "-in"]))
        candidates.append(("xsel", ["xsel", "--clipboard", "--input"]))
    return [(name, argv) for name, argv in candidates if shutil.which(argv[0])]


@dataclass
class CopyReport:
    """What happened to one copy: ``done`` ways that surely worked, ``sent`` ways that cannot confirm."""

    chars: int
    done: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def arrived(self) -> bool:
        return bool(self.done or self.sent)

    def message(self) -> str:
        if not self.arrived:
            reasons = "; ".join(self.failed) or "no terminal and no clipboard tool"
            return f"Could not copy: {reasons}"
        ways = self.done + [f"{way} (the terminal does not confirm)" for way in self.sent]
        return f"Copied {self.chars:,} characters: " + ", ".join(ways)


def _run_tool(argv: list[str], text: str) -> str | None:
    """Run a clipboard tool; None when it worked, else why not."""
    try:
        completed = subprocess.run(
            argv,
            input=text.encode("utf-8"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if completed.returncode != 0:
        lines = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {completed.returncode}"
    return None


def copy_text(
    text: str,
    write_terminal: Callable[[str], None] | None,
    *,
    environ: dict[str, str] | None = None,
    run_tool: Callable[[list[str], str], str | None] = _run_tool,
) -> CopyReport:
    """Copy ``text`` every way available. ``write_terminal`` writes raw bytes to the terminal
    (None when there is no terminal, e.g. a headless run). What is copied has no control
    characters but tab and newline (:func:`clipboard_text`): pasted into a shell, a copied reply
    cannot end the bracketed paste and run what follows."""
    text = clipboard_text(text)
    report = CopyReport(len(text))
    tmux = in_tmux(environ)
    if write_terminal is not None:
        sequence = osc52(text)
        write_terminal(sequence)
        if tmux:
            write_terminal(tmux_wrap(sequence))
        report.sent.append("terminal (OSC 52)")
    if tmux and shutil.which("tmux"):
        error = run_tool(["tmux", "load-buffer", "-w", "-"], text)
        if error is None:
            report.done.append("tmux buffer")
        else:
            report.failed.append(f"tmux load-buffer: {error}")
    for name, argv in system_tools(environ):
        error = run_tool(argv, text)
        if error is None:
            report.done.append(name)
            break
        report.failed.append(f"{name}: {error}")
    return report
