"""`serve --public-url`: behind a reverse proxy, the public name (and only it) passes the Host and
Origin checks besides the server's own names; the printed link and the page's websocket use it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import http_get
from serve_helpers import TOKEN, app_processes, launch, needs_browser, open_app, start_serve

PUBLIC = "https://agent.example.com"


def guard(public: str | None = PUBLIC, port: int = 8001):
    from tui_agent.commands.serve.guard import Guard
    from tui_agent.commands.serve.public import parse_public_url

    return Guard(TOKEN, "127.0.0.1", port, parse_public_url(public) if public else None)


def refusal(g, host: str, origin: str | None, path: str = "/ws", query: dict | None = None) -> str | None:
    headers = {"Host": host, "Sec-WebSocket-Protocol": "tui-agent, tui-agent.auth." + TOKEN.encode().hex()}
    if origin is not None:
        headers["Origin"] = origin
    return g.refusal("GET", path, headers, query or {})


def test_the_public_host_and_origin_pass_and_nothing_else_does():
    public = guard()
    # Through the proxy: Host with no port (the scheme's default) or the default port written out.
    assert refusal(public, "agent.example.com", PUBLIC) is None
    assert refusal(public, "Agent.Example.COM:443", PUBLIC) is None
    assert public.origin_for("agent.example.com") == PUBLIC
    # Its own local names keep working, with their own origin.
    assert refusal(public, "127.0.0.1:8001", "http://127.0.0.1:8001") is None
    for host, origin in [
        ("agent.example.com", "http://agent.example.com"),  # the page must be the https one
        ("agent.example.com", "https://agent.example.com:8443"),
        ("agent.example.com", "https://evil.example"),
        ("agent.example.com", "null"),
        ("agent.example.com:80", PUBLIC),  # another port of the public name
        ("agent.example.com:8001", PUBLIC),
        ("agent.example.com.evil.example", PUBLIC),  # DNS rebinding names stay refused
        ("evil.example", "https://evil.example"),
        ("evil.example:8001", "http://evil.example:8001"),
        ("127.0.0.1:8001", PUBLIC),  # a local Host with the public origin, or the other way round
    ]:
        assert refusal(public, host, origin) is not None, (host, origin)
    # Without the token a public request is refused like any other.
    assert refusal(public, "agent.example.com", PUBLIC, "/media/a.png") is not None
    assert refusal(public, "agent.example.com", PUBLIC, "/media/a.png", {"token": TOKEN}) is None
    # Without --public-url the public name is refused (what a proxy met before).
    assert refusal(guard(None), "agent.example.com", PUBLIC) is not None


def test_a_public_url_with_its_own_port_or_plain_http():
    assert guard("https://agent.example.com:8443").origin_for("agent.example.com:8443") == PUBLIC + ":8443"
    assert guard("https://agent.example.com:8443").origin_for("agent.example.com") is None
    assert guard("http://agent.example.com/").origin_for("agent.example.com") == "http://agent.example.com"
    assert guard("http://agent.example.com").origin_for("agent.example.com:443") is None
    assert guard("https://[2001:db8::5]").origin_for("[2001:db8::5]:443") == "https://[2001:db8::5]"
    assert guard("https://bücher.example").origin_for("xn--bcher-kva.example") == "https://xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://example.com/agent/", "a path (/agent/) is not supported"),
        ("ftp://agent.example.com", "use an http:// or https:// URL"),
        ("agent.example.com", "use an http:// or https:// URL"),
        ("https://", "no host name"),
        ("https://ann:secret@agent.example.com", "no user or password"),
        ("https://agent.example.com:99999", "the port must be a number from 1 to 65535"),
        ("https://agent.example.com:0", "the port must be a number from 1 to 65535"),
        ("https://agent.example.com/?x=1", "no query or fragment"),
        ("https://agent_1.example.com", "not a host name"),
        ("https://[::zz]", "not an IPv6 address"),
    ],
)
def test_a_bad_public_url_is_one_line_and_exit_2(env, url, reason):
    argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(env.vault.root), "--public-url", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: --public-url: ") and done.stderr.count("\n") == 1, done.stderr
    assert reason in done.stderr and "secret" not in done.stderr


@pytest.mark.slow
def test_the_printed_link_and_the_page_name_the_public_url(env, tmp_path):
    served = start_serve(env.vault.root, tmp_path / "serve.out", "--public-url", "https://Agent.Example.com/")
    try:
        text = served.text()
        assert f"Open: {PUBLIC}/?token={TOKEN}\n" in text
        assert f"Listening on {served.base} for the reverse proxy of {PUBLIC}\n" in text
        local = served.base
        # What the proxy forwards: the public Host; the page then opens its websocket at wss://.
        page = http_get(local + "/", headers={"Host": "agent.example.com"})
        assert page.status_code == 200
        assert 'data-session-websocket-url="wss://agent.example.com/ws"' in page.text
        assert "connect-src 'self' wss://agent.example.com/ws;" in page.headers["content-security-policy"]
        # Direct, by its own address: as before.
        direct = http_get(local + "/")
        assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws"' in direct.text
        refused = http_get(local + "/", headers={"Host": "evil.example", "Origin": "https://evil.example"})
        assert refused.status_code == 403
    finally:
        served.stop()


@pytest.mark.slow
@needs_browser()
def test_a_page_whose_session_is_refused_says_all_sessions_are_in_use(env, tmp_path):
    """Behind a proxy the page may come from a host with room and its websocket go to a full one."""
    from playwright.sync_api import sync_playwright

    served = start_serve(env.vault.root, tmp_path / "serve.out", "--max-sessions", "1")
    try:
        page = http_get(served.base + "/")  # served while this host had room (or by another host)
        kept = {name: page.headers[name] for name in ("content-type", "content-security-policy")}
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                open_app(browser, served.url, env.vault.root)  # takes the only session
                second = browser.new_page()
                second.route(
                    lambda url: url.startswith(served.base + "/?") or url == served.base + "/",
                    lambda route: route.fulfill(status=200, headers=kept, body=page.text),
                )
                second.goto(served.url)
                second.wait_for_selector("body.-refused", timeout=30_000)
                notice = second.inner_text(".notice.refused")
                assert "No session could start: all sessions of this tui-agent are in use" in notice
                assert second.is_visible("#retry") and not second.is_visible(".notice.closed")
                assert len(app_processes(served.process.pid)) == 1  # nothing started for it
            finally:
                browser.close()
    finally:
        served.stop()
