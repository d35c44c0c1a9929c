"""Starting `tui-agent serve` for tests, and the real Chromium (Debian's, through Playwright)."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
TOKEN = "test-token-0123456789"
GET_CHROMIUM = "needs Chromium at /usr/bin/chromium: apt-get install chromium chromium-driver"


def needs_browser() -> Any:
    """Skip without Chromium or Playwright, saying how to get them; in CI (CI=true) run and fail instead."""
    if os.environ.get("CI") == "true":
        return pytest.mark.skipif(False, reason="CI must run the browser tests")
    if not Path(CHROMIUM).exists():
        return pytest.mark.skip(reason=GET_CHROMIUM)
    try:
        import playwright  # noqa: F401
    except ImportError:
        return pytest.mark.skip(reason="needs Playwright: pip install -e '.[test]'")
    return pytest.mark.skipif(False, reason="Chromium is here")


def children_of(pid: int) -> set[int]:
    """All descendants of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def app_processes(pid: int) -> list[int]:
    found = []
    for child in children_of(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_text(errors="replace").split("\0")
        except OSError:
            continue
        # textual-serve starts each app through ``sh -c``: count the Python processes, not the shells.
        if "tui_agent" in argv and Path(argv[0]).name not in {"sh", "dash", "bash"}:
            found.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Served:
    process: subprocess.Popen[str]
    output: Path  # the server's stdout and stderr together
    url: str  # the printed "Open:" URL
    port: int
    local: str = ""  # with --public-url: the server's own address ("Listening on ...")

    @property
    def base(self) -> str:
        """The server's own address (not the public one of a proxy in front of it)."""
        return self.local or self.url.split("/?token=")[0]

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def start_serve(vault: Path, output: Path, *extra: str) -> Served:
    """Start serve (``--port 0`` unless given) and return once it printed its URL (not a moment longer)."""
    if "--port" not in extra:
        extra = ("--port", "0", *extra)
    if "--token" not in extra:
        extra = ("--token", TOKEN, *extra)
    argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(vault), *extra]
    with output.open("w") as sink:
        process = subprocess.Popen(argv, text=True, start_new_session=True, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        printed = output.read_text()
        match = re.search(r"^Open: (https?://\S+)$", printed, re.MULTILINE)
        if match:
            url = match.group(1)
            local = re.search(r"^Listening on (http://\S+) for the reverse proxy", printed, re.MULTILINE)
            port = int(
                re.search(r":(\d+)$" if local else r":(\d+)/\?token=", local.group(1) if local else url).group(1)
            )  # type: ignore[union-attr]
            return Served(process, output, url, port, local.group(1) if local else "")
        if process.poll() is not None:
            break
        time.sleep(0.05)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError(f"serve printed no URL: {output.read_text()}")


def launch(playwright: Any) -> Any:
    if not Path(CHROMIUM).exists():
        pytest.fail(GET_CHROMIUM)  # only in CI, which must run these
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
    )


def ready_sessions(vault: Path) -> int:
    log = vault / "logs" / "agent.log"
    return log.read_text().count("chat screen ready") if log.exists() else 0


def open_app(browser: Any, url: str, vault: Path) -> Any:
    """Open a tab at ``url`` and wait until its own app process has mounted the chat screen (keys sent
    before that would reach a process that is still starting)."""
    before = ready_sessions(vault)
    page = browser.new_page()  # a Browser or a BrowserContext (whose cookies it then shares)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url else route.abort())
    page.goto(url)
    page.wait_for_selector("body.-first-byte", timeout=30_000)
    deadline = time.monotonic() + 30
    while ready_sessions(vault) <= before and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert ready_sessions(vault) > before, "the app process never became ready"
    page.wait_for_timeout(300)
    return page


def type_message(page: Any, text: str) -> None:
    page.focus("textarea.xterm-helper-textarea")
    page.keyboard.type(text)
    page.keyboard.press("Enter")


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--host-resolver-rules=MAP evil.test 127.0.0.1",
]


@pytest.fixture(scope="session")
def chromium_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One real Chromium for the whole test session (its own profile), reached over CDP.

    Playwright's sync API keeps an event loop running while it is open, which would break the
    asyncio tests that run after it in the same worker: so the browser process is shared, and each
    test opens Playwright and connects for as long as it runs (``chromium``)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(GET_CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium-profile")
    process = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}", *CHROMIUM_ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stderr is not None
    endpoint = None
    deadline = time.monotonic() + 30
    for line in process.stderr:
        if line.startswith("DevTools listening on "):
            endpoint = line.split(" on ", 1)[1].strip()
            break
        if time.monotonic() > deadline:
            break
    if endpoint is None:
        process.kill()
        pytest.fail("Chromium did not start its DevTools endpoint")
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep its pipe drained
    yield endpoint
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture
def chromium(chromium_endpoint: str) -> Any:
    """The session's Chromium for this test; each test opens its own contexts and pages."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(chromium_endpoint)
        yield browser
        for context in browser.contexts[1:]:  # the default context stays with the browser
            context.close()
        browser.close()


def page_token(page: Any) -> str | None:
    """The token the page keeps in its tab's sessionStorage (never in a cookie)."""
    return page.evaluate("sessionStorage.getItem('tui-agent-token')")


def screen_text(page: Any) -> str:
    """The terminal's screen as text (xterm.js's buffer)."""
    return page.evaluate(
        """() => { const b = window.tuiAgent.terminal.buffer.active; const out = [];
        for (let y = 0; y < b.length; y++) out.push(b.getLine(y).translateToString(true)); return out.join("\\n"); }"""
    )


def cell_of(page: Any, text: str) -> tuple[float, float] | None:
    """The page coordinates of the middle of the first cell showing ``text``, or None."""
    for y, line in enumerate(screen_text(page).split("\n")):
        x = line.find(text)
        if x >= 0:
            box = page.evaluate(
                """() => { const r = document.querySelector('.xterm-screen').getBoundingClientRect();
                const c = window.tuiAgent.terminal._core._renderService.dimensions.css.cell;
                return [r.left, r.top, c.width, c.height]; }"""
            )
            return box[0] + (x + 0.5) * box[2], box[1] + (y + 0.5) * box[3]
    return None


def wait_cell(page: Any, text: str, timeout: float = 30.0) -> tuple[float, float]:
    """``cell_of(page, text)`` once the page shows ``text`` (the app draws a conversation after
    its process says it is ready: on a loaded host, well after)."""
    deadline = time.monotonic() + timeout
    while (cell := cell_of(page, text)) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never showed; the screen:\n{screen_text(page)}")
        page.wait_for_timeout(100)
    return cell


def wait_db(db: Path, sql: str, predicate: Callable[[list[Any]], bool], timeout: float = 30.0) -> list[Any]:
    """The rows ``sql`` reads from the SQLite file ``db``, once ``predicate`` holds for them."""
    deadline = time.monotonic() + timeout
    rows = []
    while time.monotonic() < deadline:
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute(sql).fetchall()
        except sqlite3.OperationalError:
            rows = []
        finally:
            conn.close()
        if predicate(rows):
            return rows
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting on {sql}: {rows}")
