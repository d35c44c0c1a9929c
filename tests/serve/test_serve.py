"""`tui-agent serve` end to end: token refusal, a real browser (Debian's Chromium via Playwright),
two sessions on one vault, images full size in a tab, clean shutdown."""

from __future__ import annotations

import base64
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from fake_openai import Reply
from helpers import http_get
from pilot_helpers import eventually
from repo_paths import ROOT
from serve_helpers import (
    TOKEN,
    alive,
    app_processes,
    children_of,
    launch,
    needs_browser,
    open_app,
    start_serve,
    type_message,
    wait_db,
)

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def served(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "serve.out")
    yield server
    server.stop()


def test_requests_without_the_token_are_refused_and_start_nothing(served):
    base = served.base
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for url, headers in [
        (f"{base}/?token=wrong", {}),
        (f"{base}/?token=", {}),
        (f"{base}/ws", upgrade),
        (f"{base}/ws?token=wrong&width=80&height=24", upgrade),
        (f"{base}/download/anything", {}),
        (f"{base}/media/anything.png", {}),
        (f"{base}/gallery/1", {}),
    ]:
        response = http_get(url, headers=headers, cookies={"tui_agent_token": TOKEN})
        assert response.status_code == 403, url
        assert "access token" in response.text
    time.sleep(0.5)
    assert children_of(served.process.pid) == set()
    # The page itself holds no secret (it asks for the link without one); the token is never a cookie.
    first = http_get(served.url)
    assert first.status_code == 200 and "set-cookie" not in first.headers and TOKEN not in first.text
    page = http_get(f"{base}/")
    assert page.status_code == 200 and f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in page.text
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in page.headers["content-security-policy"] and "https:" not in page.text
    # The token never reaches the log, not even through the query string of a refused request.
    http_get(f"{base}/media/x.png?token={TOKEN}&x=1")
    # the access log's line, written after the answer (not a fixed 0.5 s: a loaded machine writes it later)
    eventually(lambda: '"GET /media/x.png"' in served.text(), what="the refused request in the log")
    log = served.text().split("Press Ctrl+C to stop.\n", 1)[1]  # after the banner
    assert TOKEN not in log and '"GET /media/x.png" 404' in log


def test_banner_prints_a_working_url_with_the_real_port_and_warns_off_loopback(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "serve.out", "--host", "0.0.0.0", "--port", "0", "--token", "")
    try:
        assert ":0/" not in server.url and "0.0.0.0" not in server.url
        assert len(server.url.split("token=")[1]) >= 24
        # Printed only once the port listens: the first try, at once, gets the page.
        page = http_get(server.url, follow_redirects=True)
        assert page.status_code == 200 and "data-session-websocket-url" in page.text
        assert eventually(lambda: "WARNING: listening on 0.0.0.0, not loopback" in server.text(), what="the warning")
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=60) == 0  # bounds a hang: a loaded machine ends slower
    finally:
        server.stop()


def test_a_taken_port_is_a_one_line_error(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "first.out")
    try:
        import subprocess
        import sys

        argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(env.vault.root), "--port", str(server.port)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"error: cannot listen on 127.0.0.1:{server.port}: Address already in use"
        ]
    finally:
        server.stop()


@needs_browser()
def test_browser_chat_image_two_sessions_and_clean_shutdown(env, served):
    from PIL import Image
    from playwright.sync_api import sync_playwright

    db = env.vault.db_path
    env.fake.script(Reply(text="Hello from the browser test."), Reply(text="A fox in the snow."))
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_app(browser, served.url, env.vault.root)
        assert page.url == f"{served.base}/"  # the token left the address bar
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
        # The chat shows the generated picture: its exact colour is on screen, at its own size.
        file = env.vault.root / paths[0][0]
        color = Image.open(file).convert("RGB").getpixel((0, 0))
        screen = Image.open(shot).convert("RGB")
        where = [
            (n % screen.width, n // screen.width)
            for n, pixel in enumerate(screen.get_flattened_data())
            if all(abs(a - b) <= 2 for a, b in zip(pixel, color, strict=True))
        ]
        width, height = Image.open(file).size  # drawn pixel for pixel (Sixel through the page's image addon)
        assert len(where) >= 0.9 * width * height, f"image colour {color} not on screen ({len(where)} pixels)"
        middle = (sum(x for x, _ in where) / len(where), sum(y for _, y in where) / len(where))
        assert env.fake.chat_requests[-1]["model"] == "vision-model"

        # F3 opens the one on screen (1 / 2) full size in a new tab at /media/.
        with page.expect_popup(timeout=20_000) as popup_info:
            page.focus("textarea.xterm-helper-textarea")
            page.keyboard.press("F3")
        popup = popup_info.value
        popup.wait_for_load_state()
        relative = paths[0][0].removeprefix("media/")
        assert popup.url.startswith(f"{served.base}/media/{relative}?exp=")  # a link signed for a while
        # The app's page (same origin, the signed link) reads the route byte for byte.
        delivered = page.evaluate(
            """async (url) => {
                const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
                let s = ""; for (const b of bytes) s += String.fromCharCode(b); return btoa(s);
            }""",
            popup.url,
        )
        assert base64.b64decode(delivered) == file.read_bytes()
        size = popup.evaluate("[document.images[0].naturalWidth, document.images[0].naturalHeight]")
        assert tuple(size) == Image.open(file).size  # the browser shows the real file, full size
        popup.screenshot(path=str(ARTIFACTS / "serve-media-tab.png"))
        popup.close()

        # Download stays its own action (F4).
        with page.expect_download(timeout=20_000) as download:
            page.focus("textarea.xterm-helper-textarea")
            page.keyboard.press("F4")
        assert Path(download.value.path()).read_bytes() == file.read_bytes()
        assert download.value.suggested_filename.endswith(".png")

        # The palette's gallery: this conversation's images full size, the arrow keys page through them.
        with page.expect_popup(timeout=20_000) as popup_info:
            page.focus("textarea.xterm-helper-textarea")
            page.keyboard.press("Control+p")
            page.wait_for_timeout(800)
            page.keyboard.type("Browse images")
            page.wait_for_timeout(800)
            page.keyboard.press("Enter")
        gallery = popup_info.value
        gallery.wait_for_load_state()
        second_relative = paths[1][0].removeprefix("media/")
        assert gallery.url.startswith(f"{served.base}/gallery/")
        assert gallery.text_content(".counter") == "1 / 2"
        gallery.wait_for_function("document.images[0].complete && document.images[0].naturalWidth > 0")
        assert gallery.evaluate("document.images[0].naturalWidth") == Image.open(file).size[0]
        gallery.screenshot(path=str(ARTIFACTS / "serve-gallery.png"))
        with gallery.expect_navigation():
            gallery.keyboard.press("ArrowRight")
        assert gallery.text_content(".counter") == "2 / 2"
        assert gallery.get_attribute("#image", "src").startswith(f"/media/{second_relative}?exp=")
        with gallery.expect_navigation():
            gallery.keyboard.press("ArrowRight")
        assert gallery.text_content(".counter") == "1 / 2"
        gallery.close()

        # A click on the picture opens it too.
        with page.expect_popup(timeout=20_000) as popup_info:
            page.mouse.click(*middle)  # the middle of the picture
        clicked = popup_info.value
        assert clicked.url.startswith(f"{served.base}/media/{relative}?exp=")
        clicked.close()
        page.mouse.click(640, 746)  # back to the composer

        # A second browser session gets its own app process on the same vault.
        env.fake.script(Reply(text="second session reply", chunk_size=2, chunk_delay_s=0.01), Reply(text="first again"))
        second = open_app(browser, served.url, env.vault.root)
        type_message(second, "from the second tab")
        type_message(page, "and from the first")
        wait_db(
            db,
            "SELECT content FROM messages WHERE role = 'assistant'",
            lambda r: {("second session reply",), ("first again",)} <= set(r),
        )
        assert len(app_processes(served.process.pid)) >= 2
        browser.close()

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    users = {r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'user'")}
    assert conn.execute("SELECT count(*) FROM messages WHERE role = 'error'").fetchone() == (0,)
    conn.close()
    assert {"hello browser", "from the second tab", "and from the first"} <= users

    descendants = children_of(served.process.pid)
    served.process.send_signal(signal.SIGINT)  # what Ctrl+C sends
    assert served.process.wait(timeout=60) == 0  # bounds a hang: a loaded machine ends slower
    assert eventually(lambda: [pid for pid in descendants if alive(pid)] == [], what="the app processes gone")
    assert TOKEN not in served.text().split("Press Ctrl+C to stop.\n", 1)[1]
