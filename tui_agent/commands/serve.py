"""``tui-agent serve``: the same app in a browser through textual-serve, behind an access token.

Like Jupyter: a random token per start (or ``--token`` / ``$TUI_AGENT_TOKEN``); the printed URL
carries it; the first page load sets a same-site cookie so the page's assets and websocket pass
too. Every request without the right token gets 403 before any handler runs, so no app process
is ever started for it. Each browser session gets its own app process on the same vault.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import logging
import os
import secrets
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from tui_agent.core.profiles import ProfileError
from tui_agent.core.session import open_session

TOKEN_ENV = "TUI_AGENT_TOKEN"
COOKIE = "tui_agent_token"
log = logging.getLogger("tui_agent.serve")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def app_command(vault: str, profile: str | None) -> str:
    """The shell command textual-serve runs for each browser session."""
    argv = [sys.executable, "-m", "tui_agent", "--vault", vault]
    if profile:
        argv += ["--profile", profile]
    return shlex.join(argv)


def make_server(command: str, host: str, port: int, token: str) -> Any:
    from aiohttp import web
    from textual_serve.server import Server

    class TokenServer(Server):
        """textual-serve's server with a token check in front of every route."""

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(self._require_token)
            return app

        @web.middleware
        async def _require_token(
            self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            supplied = request.query.get("token") or request.cookies.get(COOKIE) or ""
            if not hmac.compare_digest(supplied.encode(), token.encode()):
                log.warning(
                    "refused %s %s from %s: missing or wrong token", request.method, request.path, request.remote
                )
                return web.Response(
                    status=403,
                    text="403 Forbidden: missing or wrong access token; use the URL tui-agent serve printed.\n",
                )
            if request.path == "/":
                # The websocket URL is built from the address the browser used, not the bind address.
                self.public_url = f"{request.scheme}://{request.host}"
            response = await handler(request)
            if request.query.get("token"):
                response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
            return response

        async def on_startup(self, app: web.Application) -> None:
            pass  # tui-agent prints its own banner with the tokenized URL

    return TokenServer(command, host=host, port=port, title="tui-agent")


def run_serve(vault_arg: str | None, args: argparse.Namespace) -> int:
    try:
        session = open_session(vault_arg)
        session.profile(args.profile)
    except ProfileError as exc:
        print(f"error: profile {exc}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    # The served app's terminal (xterm.js) has no Sixel or Kitty support: colour half-blocks.
    os.environ["TUI_AGENT_SERVED"] = "1"
    os.environ["TUI_AGENT_IMAGES"] = "halfcell"
    command = app_command(str(session.vault.root), args.profile)
    server = make_server(command, args.host, args.port, token)
    shown_host = args.host if ":" not in args.host else f"[{args.host}]"
    print(f"tui-agent serving vault {session.vault.root}", flush=True)
    print(f"Open: http://{shown_host}:{args.port}/?token={token}", flush=True)
    if not is_loopback(args.host):
        print(
            f"WARNING: listening on {args.host}, not loopback. Anyone with the token who can reach this "
            "address gets an agent that can read your vault and use your API key.",
            file=sys.stderr,
            flush=True,
        )
    print("Press Ctrl+C to stop.", flush=True)
    session.close()
    server.serve()
    return 0
