"""Copy: the OSC 52 sequence (plain and tmux-wrapped), real tmux buffers, honest reports."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess

import pytest
from repo_paths import ROOT

from tui_agent.ui import clipboard


def decode_osc52(sequence: str) -> str:
    assert sequence.startswith("\x1b]52;c;") and sequence.endswith("\a")
    return base64.b64decode(sequence[len("\x1b]52;c;") : -1]).decode("utf-8")


def test_osc52_outside_tmux_is_sent_once_and_reported_unconfirmed():
    written: list[str] = []
    report = clipboard.copy_text("héllo `code`", written.append, environ={})
    assert [decode_osc52(s) for s in written] == ["héllo `code`"]
    assert report.arrived and report.done == []
    assert report.message() == "Copied 12 characters: terminal (OSC 52) (the terminal does not confirm)"


def test_inside_tmux_the_sequence_is_also_wrapped_for_passthrough():
    written: list[str] = []
    calls: list[list[str]] = []

    def run_tool(argv: list[str], text: str) -> str | None:
        calls.append(argv)
        return None

    report = clipboard.copy_text("abc", written.append, environ={"TMUX": "/tmp/x,1,0"}, run_tool=run_tool)
    plain, wrapped = written
    assert decode_osc52(plain) == "abc"
    # DCS tmux; <sequence with every ESC doubled> ST
    assert wrapped == "\x1bPtmux;" + plain.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    if shutil.which("tmux"):
        assert calls[0] == ["tmux", "load-buffer", "-w", "-"]
        assert "tmux buffer" in report.done


def test_nothing_available_says_so_and_never_claims_a_copy():
    report = clipboard.copy_text("abc", None, environ={})
    assert not report.arrived
    assert report.message().startswith("Could not copy")
    assert "Copied" not in report.message()


def test_a_failing_system_tool_is_reported(tmp_path, monkeypatch):
    tool = tmp_path / "xclip"
    tool.write_text('#!/bin/sh\necho "Error: Cannot open display: :99" >&2\nexit 1\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    report = clipboard.copy_text("abc", None, environ={"DISPLAY": ":99"})
    assert not report.arrived
    assert report.failed[0].startswith("xclip: Error: Can")
    assert report.message().startswith("Could not copy: xclip: Error: Can")


def test_a_working_system_tool_receives_the_text(tmp_path, monkeypatch):
    sink = tmp_path / "clip.txt"
    tool = tmp_path / "wl-copy"
    tool.write_text(f"#!/bin/sh\ncat > {sink}\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    report = clipboard.copy_text("line 1\nline 2", None, environ={"WAYLAND_DISPLAY": "wayland-0"})
    assert sink.read_text() == "line 1\nline 2"
    assert report.done == ["wl-copy"] and report.message() == "Copied 13 characters: wl-copy"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: apt-get install tmux")
def test_real_tmux_buffer_receives_the_text(tmp_path):
    socket = str(tmp_path / "tmux.sock")
    subprocess.run(["tmux", "-S", socket, "new-session", "-d", "-s", "clip", "sleep 30"], check=True)
    try:
        environ = {"TMUX": f"{socket},1,0"}

        def run_tool(argv: list[str], text: str) -> str | None:
            argv = [argv[0], "-S", socket, *argv[1:]]
            completed = subprocess.run(argv, input=text.encode(), capture_output=True, check=False)
            return None if completed.returncode == 0 else completed.stderr.decode()

        report = clipboard.copy_text("from the app ✓", None, environ=environ, run_tool=run_tool)
        assert report.done == ["tmux buffer"]
        shown = subprocess.run(["tmux", "-S", socket, "show-buffer"], capture_output=True, text=True, check=True)
        assert shown.stdout == "from the app ✓"
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], check=False)


def test_the_app_has_one_tmux_wrapping_function():
    """OSC 52 here and Sixel pictures (ui/sixel_widget.py) go through tmux by the same function."""

    from tui_agent.ui.terminal_probe import tmux_wrap

    root = ROOT / "tui_agent"
    wrappers = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "Ptmux;" in line or '.replace("\\x1b", "\\x1b\\x1b")' in line
    ]
    assert [w.split(":")[0] for w in wrappers] == ["ui/terminal_probe.py"], wrappers
    written: list[str] = []
    clipboard.copy_text("abc", written.append, environ={"TMUX": "/tmp/x,1,0"}, run_tool=lambda argv, text: None)
    assert written[1] == tmux_wrap(written[0])
