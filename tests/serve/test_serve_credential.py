"""serve's credential is one a browser never sends to another port: no cookie (a browser sends a
host's cookies to every port of it, so any local web server the user visits would get ours), the
token kept in the tab's sessionStorage and sent in the websocket handshake, short-lived signed links
for /media/, /gallery/ and downloads. Replaying what another port could have seen opens nothing."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import sqlite3
import time

import aiohttp
import pytest
from fake_openai import Reply, png_bytes
from helpers import http_get
from serve_helpers import TOKEN, app_processes, children_of, needs_browser, open_app, page_token, start_serve, wait_db

from tui_agent.commands.serve.guard import Guard


@pytest.fixture
def served(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "serve.out")
    yield server
    server.stop()


def old_cookie(port: int) -> str:
    """The cookie serve used to set (``tui_agent_<port>_<digest>``), as another local server received it."""
    name = f"tui_agent_{port}_{hashlib.sha256(TOKEN.encode()).hexdigest()[:10]}"
    value = hmac.new(TOKEN.encode(), f"cookie {name}".encode(), hashlib.sha256).hexdigest()
    return f"{name}={value}"


async def replay(url: str, origin: str, cookie: str, protocols: tuple[str, ...] = ()) -> int | str:
    """A non-browser client: any Origin it likes, the cookie, then a typed message if it gets in."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers={"Origin": origin, "Cookie": cookie}, protocols=protocols) as ws:
                await ws.send_json(["stdin", "typed by the attacker\r"])
                await asyncio.sleep(3)
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


@pytest.mark.slow
def test_the_old_cookie_replayed_with_a_forged_origin_opens_nothing(env, served):
    cookie = old_cookie(served.port)
    url = f"ws://127.0.0.1:{served.port}/ws?width=80&height=24"
    for origin in (served.base, f"http://localhost:{served.port}"):
        assert asyncio.run(replay(url.replace("127.0.0.1", origin.split("//")[1].split(":")[0]), origin, cookie)) == 403
    # Nor with a made-up subprotocol, nor a wrong token in it.
    assert asyncio.run(replay(url, served.base, cookie, ("tui-agent",))) == 403
    assert asyncio.run(replay(url, served.base, cookie, ("tui-agent", "tui-agent.auth." + b"wrong".hex()))) == 403
    assert asyncio.run(replay(url, served.base, cookie, ("tui-agent", "tui-agent.auth.zz"))) == 403
    time.sleep(0.5)
    assert children_of(served.process.pid) == set()
    # The cookie opens nothing else either.
    (env.vault.media / "pic.png").write_bytes(png_bytes())
    for path in ("/media/pic.png", "/gallery/1", "/download/key"):
        response = http_get(served.base + path, headers={"Cookie": cookie, "Origin": served.base})
        assert response.status_code == 403, path
    rows = sqlite3.connect(env.vault.db_path).execute("SELECT content FROM messages").fetchall()
    assert "typed by the attacker" not in str(rows)


@pytest.mark.slow
def test_signed_links_open_their_own_path_for_a_while_only(env, served, tmp_path):
    image = png_bytes((10, 200, 30), (40, 30))
    (env.vault.media / "pic.png").write_bytes(image)
    (env.vault.media / "other.png").write_bytes(png_bytes())
    guard = Guard(token=TOKEN, bind_host="127.0.0.1", port=served.port)
    link = guard.sign("/media/pic.png")
    assert TOKEN not in link
    ok = http_get(served.base + link)
    assert ok.status_code == 200 and ok.content == image
    download = http_get(served.base + guard.sign("/media/pic.png", "download=1"))
    assert download.headers["content-disposition"] == 'attachment; filename="pic.png"'
    query = link.split("?", 1)[1]
    for refused in (
        f"/media/other.png?{query}",  # another picture with this one's signature
        link.replace("sig=", "sig=0"),
        link[:-1] + ("0" if link[-1] != "0" else "1"),
        link.replace("exp=", "exp=9"),  # a later expiry with the same signature
        guard.sign("/media/pic.png", ttl=-1),  # expired
        Guard(token="another-token", bind_host="127.0.0.1", port=served.port).sign("/media/pic.png"),
    ):
        response = http_get(served.base + refused)
        assert response.status_code == 403 and response.content != image, refused
    assert "expired" in http_get(served.base + guard.sign("/media/pic.png", ttl=-1)).text
    # A signed link is still only for our own page: not for a request from another origin.
    other = {"Origin": f"http://127.0.0.1:{served.port + 1}"}
    assert http_get(served.base + link, headers=other).status_code == 403
    assert http_get(served.base + link, headers={"Sec-Fetch-Site": "same-site"}).status_code == 403


@pytest.mark.slow
@needs_browser()
def test_the_browser_keeps_the_token_in_its_tab_and_no_cookie(env, served, chromium):
    env.fake.script(Reply(text="the page still works"))
    context = chromium.new_context()
    try:
        page = open_app(context, served.url, env.vault.root)
        assert page.url == f"{served.base}/"  # out of the address bar
        assert context.cookies() == []  # nothing a browser would send to another port
        assert page_token(page) == TOKEN
        before = len(app_processes(served.process.pid))
        # A reload keeps the tab's token: the app comes back.
        page.reload()
        page.wait_for_selector("body.-first-byte", timeout=30_000)
        page.focus("textarea.xterm-helper-textarea")
        page.keyboard.type("hello after a reload")
        page.keyboard.press("Enter")
        wait_db(env.vault.db_path, "SELECT content FROM messages", lambda r: ("the page still works",) in r)
        # Another tab of the same browser without the link has no token: it asks for the link and starts nothing.
        stranger = context.new_page()
        stranger.goto(f"{served.base}/")
        stranger.wait_for_selector("body.-no-token")
        assert stranger.is_visible("text=open the link") and page_token(stranger) is None
        stranger.wait_for_timeout(1000)
        assert len(app_processes(served.process.pid)) <= max(before, 1)
    finally:
        context.close()
