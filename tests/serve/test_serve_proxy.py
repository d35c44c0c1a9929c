"""Several `tui-agent serve` behind one reverse proxy (a real nginx, TLS at the proxy), all on one
PostgreSQL database with one token: a conversation started through one upstream is opened through
the other, a full host hands the next browser to the other one, foreign names stay refused."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
from fake_openai import Reply, png_bytes
from helpers import http_get
from pg_cluster import free_port
from pilot_helpers import eventually
from serve_helpers import CHROMIUM, CHROMIUM_ARGS, TOKEN, Served, needs_browser, ready_sessions, screen_text
from serve_helpers import start_serve as serve
from store_rows import rows

from tui_agent.core.vault import Vault

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)]


NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
NAME = "agent.test"  # Chromium resolves it to 127.0.0.1 (--host-resolver-rules); so does httpx2 below
NGINX_CONF = """
worker_processes 1;
error_log {tmp}/error.log info;
pid {tmp}/nginx.pid;
events {{ worker_connections 128; }}
http {{
  access_log {tmp}/access.log;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
  upstream tui_agent {{
    server 127.0.0.1:{port_a} max_fails=0;
    server 127.0.0.1:{port_b} max_fails=0;
  }}
  server {{
    listen 127.0.0.1:{port} ssl http2;
    server_name {name};
    ssl_certificate {tmp}/cert.pem;
    ssl_certificate_key {tmp}/key.pem;
    location / {{
      proxy_pass http://tui_agent;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_buffering off;
      proxy_next_upstream error timeout http_503;
    }}
  }}
}}
"""


def needs_nginx() -> Any:
    if os.environ.get("CI") != "true" and not Path(NGINX).exists():
        return pytest.mark.skip(reason="needs nginx: apt-get install nginx")
    return pytest.mark.skipif(False, reason="nginx is here")


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    port: int
    folder: Path

    @property
    def public(self) -> str:
        return f"https://{NAME}:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def certificate(folder: Path) -> None:
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={NAME}"]
    names = ["-addext", f"subjectAltName=DNS:{NAME}"]
    files = ["-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")]
    subprocess.run([*request, *names, *files], check=True, capture_output=True)


def start_nginx(folder: Path, port: int, upstreams: list[int]) -> Proxy | None:
    """nginx as a plain process with our config; None if ``port`` was taken meanwhile."""
    conf = NGINX_CONF.format(tmp=folder, port=port, port_a=upstreams[0], port_b=upstreams[1], name=NAME)
    (folder / "nginx.conf").write_text(conf)
    process = subprocess.Popen(
        [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (folder / "error.log").read_text(errors="replace")
            if "Address already in use" in log:
                return None
            raise AssertionError(f"nginx stopped: {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return Proxy(process, port, folder)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("nginx never listened")


@pytest.fixture
def farm(env, pg_url, tmp_path, monkeypatch):
    """Two serve processes (vaults A and B, ``--db`` the same database, one token, one session each)
    behind nginx on a free loopback port, TLS at the proxy."""
    monkeypatch.delenv("TUI_AGENT_DB")  # each serve gets the database from its own --db
    vaults = [env.vault.root, Vault(tmp_path / "vault-b").init().root]
    for vault in vaults:  # one picture on both hosts (the same bytes)
        (vault / "media" / "food").mkdir(parents=True)
        (vault / "media" / "food" / "pizza.png").write_bytes(png_bytes((20, 120, 200), (40, 30)))
    folder = tmp_path / "nginx"
    folder.mkdir()
    certificate(folder)
    for _attempt in range(3):
        port = free_port()
        public = f"https://{NAME}:{port}"
        extra = ("--db", pg_url, "--max-sessions", "1", "--public-url", public)
        servers: list[Served] = []
        try:
            for index, vault in enumerate(vaults):
                servers.append(serve(vault, tmp_path / f"serve-{index}.out", *extra))
            proxy = start_nginx(folder, port, [served.port for served in servers])
        except BaseException:
            for served in servers:
                served.stop()
            raise
        if proxy is not None:
            break
        for served in servers:
            served.stop()
    else:
        raise AssertionError("no free port for nginx")
    yield proxy, servers, vaults
    proxy.stop()
    for served in servers:
        served.stop()


def https(proxy: Proxy, path: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    """A request to the proxy naming ``agent.test`` (or the given Host)."""
    sent = {"Host": f"{NAME}:{proxy.port}", **(headers or {})}
    return httpx2.get(f"https://127.0.0.1:{proxy.port}{path}", headers=sent, verify=False)


def ready_counts(vaults: list[Path]) -> list[int]:
    return [ready_sessions(vault) for vault in vaults]


def browser_page(browser: Any, proxy: Proxy) -> Any:
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if NAME in route.request.url else route.abort())
    return page


def open_session(browser: Any, proxy: Proxy, vaults: list[Path]) -> tuple[Any, int]:
    """A new browser session through the proxy; returns the page and the index of the host it runs on."""
    before = ready_counts(vaults)
    page = browser_page(browser, proxy)
    response = page.goto(f"{proxy.public}/?token={TOKEN}")
    assert response.status == 200, response.text()
    assert page.evaluate("new URL(location.href).search") == ""  # the token left the address bar
    page.wait_for_selector("body.-first-byte", timeout=40_000)
    after = eventually(lambda: (c := ready_counts(vaults)) != before and c, what="an app process ready")
    started = [index for index, count in enumerate(after) if count > before[index]]
    assert len(started) == 1, (before, after)
    return page, started[0]


@needs_nginx()
@needs_browser()
def test_two_hosts_behind_nginx_share_the_conversation_and_the_token(env, farm):
    from playwright.sync_api import sync_playwright

    proxy, servers, vaults = farm
    env.fake.script(Reply(text="Stored once, seen on every host."), Reply(text="A fox in the snow."))
    args = [arg for arg in CHROMIUM_ARGS if not arg.startswith("--host-resolver-rules")]
    args.append(f"--host-resolver-rules=MAP {NAME} 127.0.0.1")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            first, host = open_session(browser, proxy, vaults)
            # The page reached its app over wss:// through the proxy.
            assert first.evaluate("window.tuiAgent.socket.url").startswith(f"wss://{NAME}:{proxy.port}/ws?")
            first.wait_for_timeout(300)
            first.focus("textarea.xterm-helper-textarea")
            first.keyboard.type("hello across hosts")
            first.keyboard.press("Enter")
            eventually(
                lambda: (
                    rows("SELECT content FROM messages WHERE role = 'assistant'")
                    == [{"content": "Stored once, seen on every host."}]
                ),
                what="the reply in the shared database",
            )
            first.keyboard.type("/imagine a red fox")
            first.keyboard.press("Enter")
            pictures = eventually(
                lambda: len(found := rows("SELECT path FROM attachments")) == 2 and found, what="the picture"
            )
            # The caption (the tool call is an assistant row too: count the caption's text, not rows).
            eventually(lambda: rows("SELECT id FROM messages WHERE content = 'A fox in the snow.'"), what="its caption")
            picture = (vaults[host] / pictures[0]["path"]).read_bytes()
            # The other host has no copy: its /media/ fills its cache from the shared database.
            assert not any((vaults[1 - host] / row["path"]).exists() for row in pictures)
            # Host `host` is full (--max-sessions 1): nginx hands the next browser to the other one,
            # whose app opens the last conversation from the same database.
            second, other = open_session(browser, proxy, vaults)
            assert other != host
            eventually(lambda: "hello across hosts" in screen_text(second), what="the conversation on the other host")
            eventually(lambda: "Stored once, seen on every host." in screen_text(second), what="its reply")
            # F4 there downloads the picture by a signed /media/ link, which any host answers (the
            # proxy may send it to either), not by a delivery held in one host's memory.
            with second.expect_download(timeout=30_000) as download:
                second.focus("textarea.xterm-helper-textarea")
                second.keyboard.press("F4")
            assert download.value.url.startswith(f"{proxy.public}/media/") and "download=1" in download.value.url
            assert Path(download.value.path()).read_bytes() == picture
            # Both full: the browser is told so, in a page of its own (after nginx tried both).
            third = browser_page(browser, proxy)
            response = third.goto(f"{proxy.public}/?token={TOKEN}")
            assert response.status == 503
            assert "the one session of this tui-agent is in use" in third.inner_text("body")
        finally:
            browser.close()
    # A link signed by one host opens on any host: same token, same signing key.
    from tui_agent.commands.serve.guard import Guard

    link = Guard(TOKEN, "127.0.0.1", servers[0].port).sign("/media/food/pizza.png")
    public_host = {"Host": f"{NAME}:{proxy.port}"}
    for served in servers:
        assert http_get(served.base + link, headers=public_host).content == png_bytes((20, 120, 200), (40, 30))
    assert https(proxy, link).content == png_bytes((20, 120, 200), (40, 30))  # and through the proxy


@needs_nginx()
def test_foreign_names_and_origins_are_refused_through_the_proxy(farm):
    proxy, _servers, vaults = farm
    assert https(proxy, "/").status_code == 200
    assert 'data-session-websocket-url="wss://agent.test:' in https(proxy, "/").text
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": "tui-agent, tui-agent.auth." + TOKEN.encode().hex(),
    }
    for headers in [
        {"Host": f"evil.test:{proxy.port}"},  # a rebinding name pointed at the proxy
        {"Host": f"evil.test:{proxy.port}", "Origin": f"https://evil.test:{proxy.port}", **upgrade},
        {"Origin": f"https://evil.test:{proxy.port}", **upgrade},  # our name, another site's page
        {"Origin": f"http://{NAME}:{proxy.port}", **upgrade},  # not the https page
        {"Host": NAME, **upgrade},  # the public name on another port
    ]:
        response = https(proxy, "/ws", headers)
        assert response.status_code == 403, headers
    assert https(proxy, f"/?token={TOKEN}", {"Host": f"evil.test:{proxy.port}"}).status_code == 403
    time.sleep(0.5)
    assert ready_counts(vaults) == [0, 0]  # nothing was started for them


@needs_nginx()
def test_a_full_host_hands_the_websocket_to_the_other_one(farm):
    """nginx retries a websocket upgrade that a full host refused (503, nothing started) elsewhere."""
    proxy, servers, _vaults = farm
    public = {"Host": f"{NAME}:{proxy.port}", "Origin": proxy.public}
    protocols = ("tui-agent", "tui-agent.auth." + TOKEN.encode().hex())

    async def sessions() -> list[int]:
        async with aiohttp.ClientSession() as client:
            direct = f"ws://127.0.0.1:{servers[0].port}/ws?width=80&height=24"
            # Host 0's only session, taken directly (the public name is one of its names).
            async with client.ws_connect(direct, headers=public, protocols=protocols):
                statuses = []
                for _ in range(2):  # round robin: one of the two starts at the full host
                    through = f"wss://127.0.0.1:{proxy.port}/ws?width=80&height=24"
                    try:
                        async with client.ws_connect(through, headers=public, protocols=protocols, ssl=False):
                            statuses.append(101)
                    except aiohttp.WSServerHandshakeError as exc:
                        statuses.append(exc.status)
                    while servers[1].text().count('"GET /ws" 101') < statuses.count(101):  # its session is over
                        await asyncio.sleep(0.1)
                return statuses

    assert asyncio.run(asyncio.wait_for(sessions(), 60)) == [101, 101]
    assert '"GET /ws" 503' in servers[0].text()  # refused by the full host, then served by the other
