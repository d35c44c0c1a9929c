"""No cycle collection while the app starts: from the launcher to the first frame, then through the
warm-up's imports (gc_tuning.pause / resume)."""

from __future__ import annotations

import gc
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pilot_helpers import running, until

from tui_agent.ui import gc_tuning, warmup


@pytest.fixture
def collector_on():
    """Each test starts with the collector on and no pauses, and leaves it so."""
    assert not gc_tuning._pauses
    was = gc.isenabled()
    gc.enable()
    yield
    for owner in list(gc_tuning._pauses):
        gc_tuning.resume(owner)
    if was:  # a test may have switched it off itself: the next test gets it as this one did
        gc.enable()
    else:
        gc.disable()


def test_pauses_nest_and_the_last_resume_turns_the_collector_back_on(collector_on):
    gc_tuning.pause(gc_tuning.STARTUP)
    gc_tuning.pause(gc_tuning.WARM_UP)
    assert not gc.isenabled()
    gc_tuning.resume(gc_tuning.STARTUP)
    assert not gc.isenabled()  # the warm-up still holds it
    gc_tuning.resume(gc_tuning.STARTUP)  # twice: nothing more
    assert not gc.isenabled()
    gc_tuning.resume(gc_tuning.WARM_UP)
    assert gc.isenabled()


def test_a_resume_without_its_pause_changes_nothing(collector_on):
    gc_tuning.pause(gc_tuning.WARM_UP)
    gc_tuning.resume(gc_tuning.STARTUP)
    assert not gc.isenabled() and gc_tuning._pauses == {gc_tuning.WARM_UP}


def test_a_collector_switched_off_before_the_pause_stays_off(collector_on):
    gc.disable()
    gc_tuning.pause(gc_tuning.STARTUP)
    gc_tuning.resume(gc_tuning.STARTUP)
    assert not gc.isenabled()


def test_the_start_up_pause_can_be_turned_off_for_a_b_runs(collector_on, monkeypatch):
    monkeypatch.setenv(gc_tuning.PAUSE_ENV, "0")
    gc_tuning.pause_startup()
    assert gc.isenabled() and not gc_tuning._pauses


async def test_the_first_frame_ends_the_start_up_pause(env, collector_on):
    gc_tuning.pause(gc_tuning.STARTUP)
    async with running(env) as (app, pilot):
        await pilot.pause()
        assert app.startup.until_painted is None  # the first frame is drawn
        assert gc_tuning.STARTUP not in gc_tuning._pauses
        # The warm-up may still hold it (it paused before the start-up let go): never a gap.
        assert gc.isenabled() or gc_tuning._pauses == {gc_tuning.WARM_UP}
        assert warmup.wait(60)
        await until(pilot, lambda: gc.isenabled())
        assert gc.isenabled()


# Run by the real launcher in a real pseudo-terminal: counts the collections from the start-up
# pause to its end at the first frame, and what still holds the collector then.
PROBE = """
import gc, importlib.abc, importlib.util, json, os, re, sys
from tui_agent.ui import gc_tuning
report = sys.argv[1]
started = []
collections = []
written = []  # what the app handed its terminal driver

class WrapDriverWrite(importlib.abc.MetaPathFinder):  # once Textual's driver is imported, not before
    def find_spec(self, name, path, target=None):
        if name != "textual.drivers.linux_driver":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            real_write = module.LinuxDriver.write
            def write(driver, data):
                written.append(data)
                real_write(driver, data)
            module.LinuxDriver.write = write
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, WrapDriverWrite())
gc.callbacks.append(lambda phase, info: phase == "start" and started and collections.append(info["generation"]))
real_pause, real_resume = gc_tuning.pause, gc_tuning.resume
def pause(owner):
    real_pause(owner)
    if owner == gc_tuning.STARTUP:
        started.append(sorted(m for m in ("textual", "peewee", "tui_agent.ui.app") if m in sys.modules))
def resume(owner):
    if owner == gc_tuning.STARTUP:
        real_resume(owner)
        with open(report + ".part", "w") as out:
            plain = re.sub(r"\\x1b\\[[0-9;?<>=]*[ -/]*[@-~]", "", "".join(written))
            json.dump({"collections": collections, "imported_at_pause": started, "held_by": sorted(gc_tuning._pauses),
                       "composer_written": "Message (Enter sends" in plain}, out)
        os.replace(report + ".part", report)  # whole, or not there
        return
    real_resume(owner)
gc_tuning.pause, gc_tuning.resume = pause, resume
from tui_agent.cli import main
sys.argv = ["tui-agent"]
main()
"""


COMPOSER = b"Message (Enter sends"


def plain_text(drawn: bytes) -> bytes:
    return re.sub(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]", b"", drawn)


def test_no_collection_runs_from_the_launcher_to_the_first_frame(tmp_path: Path):
    out = tmp_path / "gc.json"
    env = {**os.environ, "TUI_AGENT_VAULT": str(tmp_path / "vault"), "TERM": "xterm-256color"}
    env.pop(gc_tuning.PAUSE_ENV, None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real console entry point, on a real terminal
        os.execve(sys.executable, [sys.executable, "-c", PROBE, str(out)], env)
    drawn = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not out.exists():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    drawn += os.read(fd, 1 << 16)
                except OSError:
                    break
                if b"\x1b[c" in drawn:  # the image probe asks for the device attributes: answer
                    os.write(fd, b"\x1b[?1;2c")
                    drawn = drawn.replace(b"\x1b[c", b"")
        # The report is written once the frame was handed to Textual's writer thread, which may not
        # have written it yet (a loaded run read only the terminal's title): the app runs on, and
        # the terminal is read until the frame is there.
        drain = time.monotonic() + 30
        while out.exists() and time.monotonic() < drain and COMPOSER not in plain_text(drawn):
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    assert out.exists(), f"the app never reached its first frame: {drawn[-500:]!r}"
    seen = json.loads(out.read_text())
    assert seen["composer_written"]  # the first frame (the composer) was written before the pause ended
    assert COMPOSER in plain_text(drawn)  # ...and reached the terminal
    assert seen["imported_at_pause"] == [[]]  # paused before the app's imports began...
    assert seen["collections"] == []  # ...and nothing was collected until the first frame
    assert seen["held_by"] == [gc_tuning.WARM_UP]  # the warm-up's imports keep it paused


def test_subcommands_do_not_pause_the_collector(tmp_path: Path):
    """Only the app's start-up pauses it: a subcommand runs with the collector as it is."""
    code = (
        "import gc, json, sys\n"
        "from tui_agent.ui import gc_tuning\n"
        "paused = []\n"
        "real = gc_tuning.pause\n"
        "gc_tuning.pause = lambda owner: (paused.append(owner), real(owner))\n"
        "from tui_agent.cli import main\n"
        f"main(['profile', 'list', '--vault', {str(tmp_path / 'vault')!r}])\n"
        "print(json.dumps([paused, gc.isenabled()]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [[], True]
