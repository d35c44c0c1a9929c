"""`tui-agent serve` trusts only its own page: Host and Origin checks, the token (never a cookie),
the session cap and the guarded /media/ route, over real HTTP and websockets."""

from __future__ import annotations

import asyncio
import os
import time

import aiohttp
import pytest
from fake_openai import png_bytes
from helpers import http_get
from serve_helpers import TOKEN, app_processes, children_of, start_serve


@pytest.fixture
def served(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "serve.out")
    yield server
    server.stop()


AUTH_PROTOCOLS = ("tui-agent", "tui-agent.auth." + TOKEN.encode().hex())


def with_token(url: str) -> str:
    """``url`` carrying the access token (what a script holding it sends; a browser never adds it)."""
    return url + ("&" if "?" in url else "?") + f"token={TOKEN}"


@pytest.mark.slow
def test_only_our_own_host_and_origin_pass_even_with_the_token(served):
    base, port = served.base, served.port
    refused = [
        {"Host": f"attacker.example:{port}"},  # DNS rebinding: a name that resolved to 127.0.0.1
        {"Host": f"127.0.0.1:{port + 1}"},
        {"Host": "127.0.0.1"},
        {"Host": f"127.0.0.1:{port}@attacker.example"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},  # a page on another local port
        {"Origin": f"http://localhost:{port}"},  # not the origin this request names
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},  # an <img> or <iframe> on another port sends no Origin
        {"Sec-Fetch-Site": "cross-site"},
    ]
    for headers in refused:
        for path in ("/", "/static/tui-agent.js", with_token("/media/x.png"), with_token("/download/k")):
            response = http_get(base + path, headers=headers)
            assert response.status_code == 403, (headers, path)
            assert TOKEN not in response.text
    for headers in (
        {},
        {"Origin": base, "Sec-Fetch-Site": "same-origin"},
        {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"},
        {"Sec-Fetch-Site": "none"},  # typed into the address bar
    ):
        page = http_get(base + "/", headers=headers)  # the page holds no secret: it needs no token
        assert page.status_code == 200, headers
        host = headers.get("Host", f"127.0.0.1:{port}")
        assert f'data-session-websocket-url="ws://{host}/ws"' in page.text
    # A link with the token may come from anywhere the user clicked it, but not from a rebinding name.
    clicked = http_get(served.url, headers={"Sec-Fetch-Site": "cross-site"})
    assert clicked.status_code == 200 and "data-session-websocket-url" in clicked.text
    assert TOKEN not in clicked.text and "set-cookie" not in clicked.headers
    assert http_get(served.url, headers={"Host": f"attacker.example:{port}"}).status_code == 403
    # The page opened by another site's script (not a click: no top-level navigation) is refused.
    fetched = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    assert http_get(base + "/", headers=fetched).status_code == 403
    framed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
    assert http_get(base + "/", headers=framed).status_code == 403


def test_the_websocket_upgrade_is_refused_from_another_origin_and_starts_nothing(served):
    async def attempt(origin: str) -> int:
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(
                    f"ws://127.0.0.1:{served.port}/ws?width=80&height=24",
                    headers={"Origin": origin},
                    protocols=AUTH_PROTOCOLS,
                ) as ws:
                    await ws.close()
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status

    for origin in (f"http://127.0.0.1:{served.port + 1}", "http://attacker.example", "null"):
        assert asyncio.run(attempt(origin)) == 403
    time.sleep(0.5)
    assert children_of(served.process.pid) == set()
    assert asyncio.run(attempt(served.base)) == 101


@pytest.mark.slow
def test_no_cookie_is_ever_set_and_one_servers_token_does_not_open_another(env, tmp_path):
    other = start_serve(env.vault.root, tmp_path / "other.out", "--token", "another-token-987654321")
    first = start_serve(env.vault.root, tmp_path / "first.out")
    try:
        for url in (first.url, first.base + "/", first.base + "/static/tui-agent.js", with_token(first.base + "/x")):
            assert "set-cookie" not in http_get(url).headers, url
        assert http_get(with_token(first.base + "/media/x.png")).status_code == 404  # ours: passes, not found
        assert http_get(with_token(other.base + "/media/x.png")).status_code == 403  # another server's token

        async def upgrade(server) -> int:
            async with aiohttp.ClientSession() as session:
                try:
                    async with session.ws_connect(
                        f"ws://127.0.0.1:{server.port}/ws", headers={"Origin": server.base}, protocols=AUTH_PROTOCOLS
                    ) as ws:
                        await ws.close()
                        return 101
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status

        assert asyncio.run(upgrade(other)) == 403
    finally:
        first.stop()
        other.stop()


def test_max_sessions_caps_app_processes_with_a_clear_refusal(env, tmp_path):
    server = start_serve(env.vault.root, tmp_path / "serve.out", "--max-sessions", "1")
    try:
        url = f"ws://127.0.0.1:{server.port}/ws?width=80&height=24"
        headers = {"Origin": server.base}

        async def scenario() -> None:
            async with aiohttp.ClientSession() as session:
                first = await session.ws_connect(url, headers=headers, protocols=AUTH_PROTOCOLS)
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(url, headers=headers, protocols=AUTH_PROTOCOLS)
                assert refused.value.status == 503
                page = await session.get(server.base + "/", headers=headers)
                assert page.status == 503
                assert "503: the one session of this tui-agent is in use" in await page.text()
                # The one session's app starts through ``sh -c`` a moment after the upgrade: wait for it,
                # and never see a second one.
                deadline = time.monotonic() + 30
                while len(running := app_processes(server.process.pid)) < 1 and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                assert len(running) == 1
                await first.close()
                deadline = time.monotonic() + 30
                while True:  # the slot frees once the first app process has ended
                    try:
                        again = await session.ws_connect(url, headers=headers, protocols=AUTH_PROTOCOLS)
                        break
                    except aiohttp.WSServerHandshakeError:
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.2)
                await again.close()

        asyncio.run(scenario())
        assert "refused a new session: all 1 in use (--max-sessions)" in server.text()
        assert "Up to 1 browser session at once." in server.text()
    finally:
        server.stop()


@pytest.fixture
def media(env):
    root = env.vault.media
    (root / "food").mkdir()
    image = png_bytes((10, 200, 30), (40, 30))
    (root / "food" / "pizza.png").write_bytes(image)
    from PIL import Image

    Image.new("RGB", (8, 8), (1, 2, 3)).save(root / "food" / "photo.JPG", "JPEG")
    (root / "food" / "fake.png").write_bytes(b"<html><script>alert(1)</script></html>")
    (root / "food" / "page.html").write_text("<script>alert(1)</script>")
    (root / "food" / "sub.png").mkdir()
    (env.vault.root / "secret.png").write_bytes(image)
    os.symlink(env.vault.root / "secret.png", root / "food" / "escape.png")
    os.symlink(env.vault.db_path, root / "food" / "db.png")
    os.symlink("pizza.png", root / "food" / "inside.png")
    return image


@pytest.mark.slow
def test_media_serves_vault_images_byte_for_byte_and_nothing_else(served, media):
    base = served.base
    ok = http_get(with_token(f"{base}/media/food/pizza.png"))
    assert ok.status_code == 200 and ok.content == media
    assert ok.headers["content-type"] == "image/png"
    assert ok.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in ok.headers["content-security-policy"]
    jpeg = http_get(with_token(f"{base}/media/food/photo.JPG"))
    assert jpeg.status_code == 200 and jpeg.headers["content-type"] == "image/jpeg"  # from the bytes
    inside = http_get(with_token(f"{base}/media/food/inside.png"))  # a link that stays in media/
    assert inside.status_code == 200 and inside.content == media
    download = http_get(with_token(f"{base}/media/food/pizza.png?download=1"))
    assert download.headers["content-disposition"] == 'attachment; filename="pizza.png"'

    for path, status in [
        ("food/fake.png", 415),  # named .png, is HTML
        ("food/page.html", 400),
        ("food/sub.png", 404),  # a directory
        ("food/", 400),
        ("food", 400),
        ("food/escape.png", 400),  # symlink out of media/
        ("food/db.png", 400),
        ("food/missing.png", 404),
        ("..%2Fsecret.png", 400),
        ("%2e%2e/secret.png", 400),
        ("food/..%2F..%2Fsecret.png", 400),
        ("%2Fetc%2Fpasswd", 400),
        ("/etc/passwd", 400),
        ("food\\..\\..\\secret.png", 400),
        (".hidden.png", 400),
        ("food/pizza.png%00.png", 400),
    ]:
        response = http_get(with_token(f"{base}/media/{path}"))
        assert response.status_code == status, (path, response.status_code, response.text)
        assert response.content != media and b"alert" not in response.content
    # Dot segments are folded away by the URL rules before routing: outside /media/ nothing is served.
    for raw in ("/media/../secret.png", "/media/food/../../secret.png", "/static/../agent.db"):
        response = http_get(with_token(base + raw))
        assert response.status_code in (403, 404) and response.content != media
    assert http_get(with_token(f"{base}/media/")).status_code == 404
    assert http_get(with_token(f"{base}/static/")).status_code in (403, 404)  # no directory listing
    # Without the token, or from another origin, not even a real image.
    assert http_get(f"{base}/media/food/pizza.png").status_code == 403
    other = {"Origin": f"http://127.0.0.1:{served.port + 1}"}
    assert http_get(with_token(f"{base}/media/food/pizza.png"), headers=other).status_code == 403
    assert http_get(f"{base}/gallery/1").status_code == 403
    assert http_get(with_token(f"{base}/gallery/1"), headers=other).status_code == 403
    assert http_get(with_token(f"{base}/gallery/1")).status_code == 404  # no images in it
    img_from_other_port = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "image"}
    assert http_get(with_token(f"{base}/media/food/pizza.png"), headers=img_from_other_port).status_code == 403


def test_host_headers_name_this_machine_or_are_refused():
    from tui_agent.commands.serve.guard import Guard, split_host_header

    assert split_host_header("[::1]:8000") == ("::1", 8000)
    assert split_host_header("LOCALHOST:8000") == ("localhost", 8000)
    assert split_host_header("127.0.0.1") == ("127.0.0.1", 80)
    for bad in ["", "a b:1", "x:abc", "[::1", "evil@127.0.0.1:1", "127.0.0.1:1/x", "h:1234567", "h:"]:
        assert split_host_header(bad) is None, bad
    anywhere = Guard("t", "0.0.0.0", 8000)
    assert anywhere.origin_for("127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert anywhere.origin_for("[::1]:8000") == "http://[::1]:8000"
    assert anywhere.origin_for("127.0.0.1:8001") is None
    assert anywhere.origin_for("198.51.100.77:8000") is None  # TEST-NET-2: not this machine's address
    assert anywhere.origin_for("attacker.example:8000") is None
    assert Guard("t", "127.0.0.1", 80).origin_for("localhost") == "http://localhost"


def test_max_sessions_below_one_is_a_clear_error(env):
    import subprocess
    import sys

    argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(env.vault.root), "--max-sessions", "0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stderr == "error: --max-sessions must be at least 1\n"
