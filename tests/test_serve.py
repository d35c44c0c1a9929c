"""`tui-agent serve` end to end: token refusal, a real browser (Debian's Chromium via Playwright),
two sessions on one vault, clean shutdown."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import Reply

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
TOKEN = "test-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def start_serve(vault: Path, *extra: str, **popen: Any) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(vault), *extra]
    return subprocess.Popen(argv, text=True, start_new_session=True, **popen)


@pytest.fixture
def served(env):
    port = free_port()
    process = start_serve(
        env.vault.root, "--port", str(port), "--token", TOKEN, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        raise AssertionError("serve did not start")
    yield process, port
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_requests_without_the_token_are_refused_and_start_nothing(served):
    process, port = served
    base = f"http://127.0.0.1:{port}"
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for url, headers in [
        (f"{base}/", {}),
        (f"{base}/?token=wrong", {}),
        (f"{base}/?token=", {}),
        (f"{base}/ws", upgrade),
        (f"{base}/ws?token=wrong&width=80&height=24", upgrade),
        (f"{base}/static/js/textual.js", {}),
        (f"{base}/download/anything", {}),
    ]:
        response = httpx.get(url, headers=headers, cookies={"tui_agent_token": "nope"} if "static" in url else None)
        assert response.status_code == 403, url
        assert "access token" in response.text
    time.sleep(0.5)
    assert children_of(process.pid) == set()
    ok = httpx.get(f"{base}/?token={TOKEN}")
    assert ok.status_code == 200 and "ws://127.0.0.1" in ok.text
    assert ok.cookies.get("tui_agent_token") == TOKEN


def test_banner_prints_the_tokenized_url_and_warns_off_loopback(env):
    port = free_port()
    process = start_serve(
        env.vault.root, "--host", "0.0.0.0", "--port", str(port), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert lines[1].startswith(f"Open: http://0.0.0.0:{port}/?token=")
        assert len(lines[1].strip().split("token=")[1]) >= 24
        assert "WARNING: listening on 0.0.0.0, not loopback" in process.stderr.readline()
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=15)


needs_browser = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
    reason="Debian chromium is not installed (CI installs it)",
)


def wait_db(db: Path, sql: str, predicate, timeout: float = 30.0):
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


def launch(playwright):
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    )


def ready_sessions(vault: Path) -> int:
    log = vault / "logs" / "agent.log"
    return log.read_text().count("chat screen ready") if log.exists() else 0


def open_app(browser, port: int, vault: Path):
    """Open a tab and wait until its own app process has mounted the chat screen (keys sent
    before that would reach a process that is still starting)."""
    before = ready_sessions(vault)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url else route.abort())
    page.goto(f"http://127.0.0.1:{port}/?token={TOKEN}")
    page.wait_for_selector("body.-first-byte", timeout=30_000)
    deadline = time.monotonic() + 30
    while ready_sessions(vault) <= before and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert ready_sessions(vault) > before, "the app process never became ready"
    page.wait_for_timeout(300)
    return page


def type_message(page, text: str) -> None:
    page.focus("textarea.xterm-helper-textarea")
    page.keyboard.type(text)
    page.keyboard.press("Enter")


@needs_browser
def test_browser_chat_image_two_sessions_and_clean_shutdown(env, served):
    from PIL import Image
    from playwright.sync_api import sync_playwright

    process, port = served
    db = env.vault.db_path
    env.fake.script(Reply(text="Hello from the browser test."), Reply(text="A fox in the snow."))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_app(browser, port, env.vault.root)
        type_message(page, "hello browser")
        wait_db(
            db,
            "SELECT content FROM messages WHERE role = 'assistant'",
            lambda r: ("Hello from the browser test.",) in r,
        )

        type_message(page, "/imagine a red fox")
        paths = wait_db(db, "SELECT path FROM attachments", lambda r: len(r) == 2)
        wait_db(db, "SELECT content FROM messages WHERE role = 'assistant'", lambda r: ("A fox in the snow.",) in r)
        page.wait_for_timeout(2000)
        shot = ARTIFACTS / "serve-imagine.png"
        page.screenshot(path=str(shot))
        # The image pane shows the generated picture: its exact colour is on screen (half-blocks).
        color = Image.open(env.vault.root / paths[0][0]).convert("RGB").getpixel((0, 0))
        screen = Image.open(shot).convert("RGB")
        hits = sum(
            1
            for pixel in screen.get_flattened_data()
            if all(abs(a - b) <= 2 for a, b in zip(pixel, color, strict=True))
        )
        assert hits > 2000, f"image colour {color} not on screen ({hits} pixels)"
        assert env.fake.chat_requests[-1]["model"] == "vision-model"
        # F3 (open full size) delivers the PNG to the browser as a download.
        with page.expect_download(timeout=20_000) as download:
            page.focus("textarea.xterm-helper-textarea")
            page.keyboard.press("F3")
        delivered = Path(download.value.path())
        assert delivered.read_bytes() == (env.vault.root / paths[0][0]).read_bytes()  # the one on screen (1 / 2)
        assert download.value.suggested_filename.endswith(".png")

        # A second browser session gets its own app process on the same vault.
        env.fake.script(Reply(text="second session reply", chunk_size=2, chunk_delay_s=0.01), Reply(text="first again"))
        second = open_app(browser, port, env.vault.root)
        type_message(second, "from the second tab")
        type_message(page, "and from the first")
        wait_db(
            db,
            "SELECT content FROM messages WHERE role = 'assistant'",
            lambda r: {("second session reply",), ("first again",)} <= set(r),
        )
        apps = children_of(process.pid)
        assert len([p for p in apps if "tui_agent" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]) >= 2
        browser.close()

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    users = {r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'user'")}
    assert conn.execute("SELECT count(*) FROM messages WHERE role = 'error'").fetchone() == (0,)
    conn.close()
    assert {"hello browser", "from the second tab", "and from the first"} <= users

    descendants = children_of(process.pid)
    process.send_signal(signal.SIGINT)  # what Ctrl+C sends
    assert process.wait(timeout=20) == 0
    time.sleep(0.5)
    assert [pid for pid in descendants if alive(pid)] == []
