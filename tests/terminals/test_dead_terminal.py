"""A terminal that goes away (tmux server or session killed) or a SIGTERM ends the app within
seconds at any moment, under CPU load: at start-up, while a reply streams, while an approval
waits, during a hanging MCP call, while quitting. A reply that was running is stored as
cancelled. (Textual's writer thread died on the dead terminal and the app waited for it forever,
deaf to SIGTERM; its input thread spun on end-of-file.)

All moments run at once, each in its own tmux server, vault and fake model, to keep the time down.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply
from mcp_helpers import add_fixture, alive, started_pids, wait_gone

from tui_agent.core import profiles
from tui_agent.core.store import open_database
from tui_agent.core.vault import Vault

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: apt-get install tmux"),
]

GONE_WITHIN_S = 2.0  # the promise
SLACK_S = 3.0  # what this loaded test machine may add to it
READY = "Message (Enter sends"
# Alternate screen and mouse reporting (any motion, SGR) off again, as before the app (tmux 3.3 has
# no format for bracketed paste, and a dead pane always reports its cursor hidden).
TERMINAL_MODES = "#{alternate_on} #{mouse_any_flag} #{mouse_sgr_flag}"


@dataclass
class Moment:
    name: str
    ending: str  # kill-server | kill-session | sigterm
    replies: list[Reply] = field(default_factory=list)
    mcp: bool = False
    prompt: str = ""  # typed and sent once the app is ready
    wait_text: str = READY  # on screen before the ending
    keys: list[str] = field(default_factory=list)  # sent after wait_text, before the ending
    delay_s: float = 0.0  # start-up moments: end this long after launch instead of waiting for text
    alt_screen: bool = False  # start-up: end as soon as Textual has taken the terminal (before its first frame)
    reply_cancelled: bool = False  # a reply was streaming: it must be stored as cancelled
    terminal_after: str = ""  # the terminal still there: its modes once the app is gone (tmux formats)


@dataclass
class Outcome:
    name: str
    gone_after_s: float | None = None
    terminal_after: str = ""
    children_left: list[int] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: str = ""
    screen: str = ""  # the pane just before the ending (shown when the test fails)
    late: str = ""  # not gone in time: its threads then, and whether it ended later (a hang or a slow end)


def _tmux(socket_name: str, *args: str, check: bool = True) -> str:
    done = subprocess.run(["tmux", "-L", socket_name, *args], capture_output=True, text=True, check=check)
    return done.stdout


def _vault(root: Path, base_url: str, mcp: bool) -> Vault:
    vault = Vault(root).init()
    db = open_database(vault.db_path)
    try:
        profiles.create_profile(
            "test",
            {
                "base_url": base_url,
                "api_key_env": "",
                "chat_model": "chat-model",
                "vision_model": "vision-model",
                "image_model": "flux2-test",
                "request_timeout_s": 30,
            },
        )
        profiles.use_profile("test")
        if mcp:
            add_fixture(policy="auto")
    finally:
        db.close()
    return vault


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _run(moment: Moment, index: int, folder: Path, vault: Vault, fake: FakeOpenAI) -> Outcome:
    outcome = Outcome(moment.name)
    socket_name = f"floor-dead-{os.getpid()}-{index}"
    pid_file = folder / "app.pid"
    command = (
        f"cd {folder} && echo $$ > {pid_file} && exec env TUI_AGENT_VAULT={vault.root} TERM=xterm-256color "
        f"FIXTURE_MCP_PIDS={folder / 'mcp.pids'} "
        f"{sys.executable} -m tui_agent"
    )
    pid = 0
    try:
        _tmux(socket_name, "new-session", "-d", "-s", "app", "-x", "120", "-y", "40", command)
        if moment.terminal_after:
            _tmux(socket_name, "set-option", "-t", "app", "remain-on-exit", "on")
        _wait(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 20, "the app's pid")
        pid = int(pid_file.read_text())
        if moment.delay_s:
            time.sleep(moment.delay_s)  # a moment during start-up: no text to wait for yet
        elif moment.alt_screen:

            def taken() -> bool:
                shown = _tmux(socket_name, "display-message", "-p", "-t", "app", "#{alternate_on}", check=False)
                return shown.strip() == "1"

            _wait(taken, 60, "the app to take the terminal")
        else:

            def shows(text: str) -> bool:
                return text in _tmux(socket_name, "capture-pane", "-p", "-t", "app", check=False)

            _wait(lambda: shows(READY), 60, "the first paint")
            if moment.mcp:
                # The server has started (its imports done) before the prompt: a turn waits only
                # TURN_WAIT_S for a start under way, then runs without the server's tools.
                _wait(lambda: bool(started_pids(folder / "mcp.pids")), 60, "the MCP server to start")
            if moment.prompt:
                _tmux(socket_name, "send-keys", "-t", "app", "-l", moment.prompt)
                _tmux(socket_name, "send-keys", "-t", "app", "Enter")
            _wait(lambda: shows(moment.wait_text), 60, repr(moment.wait_text))
            for key in moment.keys:
                _tmux(socket_name, "send-keys", "-t", "app", key)
        outcome.screen = _tmux(socket_name, "capture-pane", "-p", "-t", "app", check=False)
        started = time.monotonic()
        if moment.ending == "sigterm":
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass  # the keys before it (Ctrl+Q) had ended the app already: gone at once
        else:
            _tmux(socket_name, moment.ending, *(["-t", "app"] if moment.ending == "kill-session" else []))
        deadline = started + GONE_WITHIN_S + SLACK_S
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if alive(pid):
            outcome.late = _late(pid, started)
        else:
            outcome.gone_after_s = time.monotonic() - started
            if moment.terminal_after:
                shown = _tmux(socket_name, "display-message", "-p", "-t", "app", moment.terminal_after, check=False)
                outcome.terminal_after = shown.strip()
        outcome.children_left = wait_gone(started_pids(folder / "mcp.pids"), timeout_s=30)
    except Exception as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        if not outcome.screen:
            outcome.screen = _tmux(socket_name, "capture-pane", "-p", "-t", "app", check=False)
    finally:
        for reply in moment.replies:
            if reply.hold is not None:
                reply.hold.set()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True)
    conn = sqlite3.connect(vault.db_path)
    try:
        outcome.rows = conn.execute("SELECT role, content, status FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()
    return outcome


def _threads(pid: int) -> str:
    """Each thread of ``pid``: name, state and the kernel function it waits in."""
    found = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            stat = (task / "stat").read_text()
            wchan = (task / "wchan").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        found.append(f"{name}:{rest.split()[0]}:{wchan or '-'}")
    return " ".join(found)


def _late(pid: int, started: float) -> str:
    """What a process still alive at the deadline was doing, and whether it ended in the next 30 s:
    a failure then says a hang from a slow end (the assertion stays the promise's)."""
    threads = _threads(pid)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = f"gone after {time.monotonic() - started:.1f} s" if not alive(pid) else "still running 30 s later"
    return f"late ({ended}); threads at the deadline: {threads}"


def _burner() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _moments() -> list[Moment]:
    def streaming() -> Reply:
        # Still streaming when the terminal goes: the screen keeps changing (what filled the queue of
        # the dead writer thread), and the end is held so the reply cannot finish first.
        return Reply(
            text="Partial words " + "more words " * 300, chunk_size=6, chunk_delay_s=0.01, hold=threading.Event()
        )

    approval = Reply(
        tool_calls=[("memory_sql", json.dumps({"query": "UPDATE messages SET content = 'x' WHERE id = 1"}))]
    )
    hanging_mcp = Reply(tool_calls=[("slow", json.dumps({"seconds": 600}))])
    mcp_running = "running fx: slow"  # the MCP tool's progress (without the server: "running slow", then an error)
    moments = [
        Moment(f"start-up {delay:.2f}s, {ending}", ending, delay_s=delay)
        for delay, ending in (
            (0.05, "kill-server"),
            (0.3, "kill-session"),
            (0.6, "kill-server"),
            (0.9, "sigterm"),
            (1.3, "kill-server"),
            (1.8, "kill-session"),
        )
    ]
    moments += [
        Moment(f"start-up, terminal just taken, {ending}", ending, alt_screen=True)
        for ending in ("kill-server", "kill-session", "sigterm")
    ]
    for ending in ("kill-server", "kill-session", "sigterm", "kill-server", "kill-session"):
        moments.append(
            Moment(
                f"streaming, {ending}",
                ending,
                [streaming()],
                prompt="tell me",
                wait_text="more words more words",
                reply_cancelled=True,
            )
        )
    moments += [
        Moment("approval, kill-server", "kill-server", [approval], prompt="edit it", wait_text="Allow memory_sql"),
        Moment(
            "MCP call, kill-session", "kill-session", [hanging_mcp], mcp=True, prompt="sleep", wait_text=mcp_running
        ),
        Moment(
            "MCP call, Ctrl+Q, sigterm (terminal stays)",
            "sigterm",
            [hanging_mcp],
            mcp=True,
            prompt="sleep",
            wait_text=mcp_running,
            keys=["C-q"],
            terminal_after=TERMINAL_MODES,
        ),
        Moment(
            "MCP call, Esc, Ctrl+Q, kill-server",
            "kill-server",
            [hanging_mcp],
            mcp=True,
            prompt="sleep",
            wait_text=mcp_running,
            keys=["Escape", "C-q"],
        ),
        Moment("quit, kill-server", "kill-server", keys=["C-q"]),
    ]
    return moments


def test_the_app_ends_within_seconds_when_its_terminal_goes_away(tmp_path, monkeypatch):
    monkeypatch.setenv("FIXTURE_MCP_PIDS", "")  # the server config names it; each app's own value is used
    moments = _moments()
    fakes = [FakeOpenAI().start() for _ in moments]
    vaults = []
    for index, (moment, fake) in enumerate(zip(moments, fakes, strict=True)):
        fake.script(*moment.replies)
        folder = tmp_path / f"m{index}"
        folder.mkdir()
        vaults.append(_vault(folder / "vault", fake.base_url, moment.mcp))
    burners = [_burner(), _burner()]
    try:
        with ThreadPoolExecutor(len(moments)) as pool:
            outcomes = list(
                pool.map(
                    lambda args: _run(*args),
                    [
                        (m, i, tmp_path / f"m{i}", v, f)
                        for i, (m, v, f) in enumerate(zip(moments, vaults, fakes, strict=True))
                    ],
                )
            )
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        for fake in fakes:
            fake.stop()
    report = "\n".join(
        f"{o.name}: gone after {o.gone_after_s} s {o.late} {o.error} {o.rows} MCP left: {o.children_left} {o.terminal_after}"
        for o in outcomes
    )
    failed = "\n".join(f"--- {o.name}: {o.error}\n{o.screen}" for o in outcomes if o.error)
    assert not failed, f"{report}\n{failed}"
    assert all(o.gone_after_s is not None for o in outcomes), report
    assert all(o.children_left == [] for o in outcomes), report
    for index, (moment, outcome) in enumerate(zip(moments, outcomes, strict=True)):
        logs = sorted((tmp_path / f"m{index}" / "vault").rglob("*.log"))
        said = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
        assert moment.mcp == bool(started_pids(tmp_path / f"m{index}" / "mcp.pids")), (
            f"{outcome.name}: MCP server started? rows {outcome.rows}\n{outcome.screen}\n{said}"
        )
    for moment, outcome in zip(moments, outcomes, strict=True):
        assert all(row[2] != "streaming" for row in outcome.rows), report
        if moment.terminal_after:
            assert outcome.terminal_after == "0 0 0", report
        if moment.reply_cancelled:
            assert outcome.rows[-1][0] == "assistant" and outcome.rows[-1][2] == "cancelled", report
            assert outcome.rows[-1][1].startswith("Partial words"), report
    print(report)
