"""In real Chromium: a page served from another local port cannot drive or read `tui-agent serve`,
even after the user opened the real app in the same browser; the server's own page still works;
/media/ gives the page with the token the real bytes and refuses everything else."""

from __future__ import annotations

import base64
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fake_openai import POLL_S, Reply, png_bytes
from serve_helpers import app_processes, launch, needs_browser, open_app, start_serve, type_message, wait_db

pytestmark = pytest.mark.slow

ATTACK = """<!doctype html><html><body><script>
window.results = {};
(async () => {
  const target = "http://127.0.0.1:PORT";
  results.ws = await new Promise((done) => {
    const ws = new WebSocket("ws://127.0.0.1:PORT/ws?width=80&height=24");
    ws.onopen = () => { ws.send(JSON.stringify(["stdin", "typed by the attacker\\r"])); done("open"); };
    ws.onmessage = (e) => { results.read = true; };
    ws.onerror = () => done("error");
    setTimeout(() => done("timeout"), 15000);
  });
  for (const path of ["/", "/media/food/pizza.png"]) {
    try {
      const response = await fetch(target + path, { credentials: "include" });
      results[path] = "read " + response.status + " " + (await response.text()).length;
    } catch (e) { results[path] = "blocked"; }
  }
  results.img = await new Promise((done) => {
    const img = new Image();
    img.onload = () => done("loaded " + img.naturalWidth);
    img.onerror = () => done("error");
    img.src = target + "/media/food/pizza.png";
  });
  const frame = document.createElement("iframe");
  frame.src = target + "/";
  document.body.appendChild(frame);
  await new Promise((done) => setTimeout(done, 1500));
  results.done = true;
})();
</script></body></html>"""


class AttackerPage(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def attacker():
    server = ThreadingHTTPServer(("127.0.0.1", 0), AttackerPage)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@needs_browser()
def test_a_page_from_another_port_cannot_open_the_websocket_or_read_anything(env, tmp_path, attacker):
    from playwright.sync_api import sync_playwright

    image = png_bytes((10, 200, 30), (40, 30))
    (env.vault.media / "food").mkdir()
    (env.vault.media / "food" / "pizza.png").write_bytes(image)
    (env.vault.media / "food" / "fake.png").write_bytes(b"<script>alert(1)</script>")
    (env.vault.root / "secret.png").write_bytes(image)
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    AttackerPage.page = ATTACK.replace("PORT", str(served.port)).encode()
    env.fake.script(Reply(text="only the real page gets here"))
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            context = browser.new_context()
            # The user opened the real app first (its tab kept the token; the browser holds no cookie).
            page = context.new_page()
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte", timeout=30_000)
            assert context.cookies() == []
            page.close()
            time.sleep(2)  # that tab's app process ends
            before = len(app_processes(served.process.pid))

            evil = context.new_page()
            evil.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
            evil.wait_for_function("window.results && window.results.done", timeout=40_000)
            results = evil.evaluate("window.results")
            assert results["ws"] == "error" and "read" not in results
            assert results["/"] == "blocked" and results["/media/food/pizza.png"] == "blocked"
            assert results["img"] == "error"
            framed = [frame for frame in evil.frames if frame != evil.main_frame]
            assert framed and all("data-session-websocket-url" not in frame.content() for frame in framed)
            assert len(app_processes(served.process.pid)) <= before
            log = served.text()
            assert log.count("refused GET /ws") == 1 and "request from another origin" in log
            assert "typed by the attacker" not in str(
                sqlite3.connect(env.vault.db_path).execute("SELECT content FROM messages").fetchall()
            )

            # The printed link clicked on another site's page still lands in the app (and drops the token).
            linker = context.new_page()
            linker.goto(f"http://evil.test:{attacker.server_address[1]}/")
            linker.evaluate(
                "url => { const a = document.createElement('a'); a.id = 'go'; a.href = url; a.textContent = 'go';"
                " document.body.prepend(a); }",
                served.url,
            )
            linker.click("#go")
            linker.wait_for_url(f"{served.base}/")
            assert linker.get_attribute("#terminal", "data-session-websocket-url") == f"ws://127.0.0.1:{served.port}/ws"
            linker.close()

            # Without the token (a fresh browser profile) the media route refuses the real image.
            stranger = browser.new_context().new_page()
            response = stranger.goto(f"{served.base}/media/food/pizza.png")
            assert response is not None and response.status == 403 and response.body() != image

            # The server's own page still works, and reads /media/ byte for byte.
            app = open_app(context, served.url, env.vault.root)
            fetched = app.evaluate(
                """async (paths) => {
                    const out = {};
                    const token = sessionStorage.getItem("tui-agent-token");  // what this page holds
                    for (const path of paths) {
                        const response = await fetch(path + "?token=" + encodeURIComponent(token));
                        const bytes = new Uint8Array(await response.arrayBuffer());
                        let s = ""; for (const b of bytes) s += String.fromCharCode(b);
                        out[path] = [response.status, response.headers.get("content-type"), btoa(s)];
                    }
                    return out;
                }""",
                ["/media/food/pizza.png", "/media/food/fake.png", "/media/..%2Fsecret.png", "/media/food/"],
            )
            status, mime, body = fetched["/media/food/pizza.png"]
            assert (status, mime, base64.b64decode(body)) == (200, "image/png", image)
            assert fetched["/media/food/fake.png"][0] == 415
            assert fetched["/media/..%2Fsecret.png"][0] == 400
            assert fetched["/media/food/"][0] == 400
            type_message(app, "hello from the real page")
            wait_db(env.vault.db_path, "SELECT content FROM messages", lambda r: ("only the real page gets here",) in r)
            browser.close()
    finally:
        served.stop()
