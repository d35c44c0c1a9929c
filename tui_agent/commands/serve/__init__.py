"""``tui-agent serve``: the same app in a browser through textual-serve, behind an access token.

Like Jupyter: a random token per start (or ``--token`` / ``$TUI_AGENT_TOKEN``); the printed URL
carries it; the page keeps it in its tab's sessionStorage (never a cookie: a browser sends cookies
to every port of a host), drops it from the address bar and sends it in the websocket handshake.
Every request must name this server (Host), come from its own page (Origin, Sec-Fetch-Site) and,
beyond the page and its script, carry the token or a signed link, or it gets 403 before any handler
runs, so no app process is ever started for it (``guard.py``). The page is ours (``web/``):
xterm.js with its image addon, so the app draws pictures in Sixel (``session.py``). Each browser
session gets its own app process on the same vault, up to ``--max-sessions``. ``/media/<path>``
serves the vault's images (``media.py``). Behind a reverse proxy, ``--public-url`` names the address
browsers use (``public.py``): the guard accepts it and the printed link uses it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import sys

from tui_agent.commands.serve.guard import Guard, is_loopback, primary_address, url_host
from tui_agent.commands.serve.public import PublicURLError, parse_public_url
from tui_agent.core.profiles import ProfileError
from tui_agent.core.session import open_session

TOKEN_ENV = "TUI_AGENT_TOKEN"
# Tells each app process that the server has a /media/ route (F3 opens an image there in a tab).
MEDIA_ENV = "TUI_AGENT_MEDIA_ROUTE"
DEFAULT_MAX_SESSIONS = 4

__all__ = ["app_command", "is_loopback", "run_serve"]


def app_command(vault: str, profile: str | None) -> str:
    """The shell command textual-serve runs for each browser session."""
    argv = [sys.executable, "-m", "tui_agent", "--vault", vault]
    if profile:
        argv += ["--profile", profile]
    return shlex.join(argv)


def run_serve(vault_arg: str | None, args: argparse.Namespace) -> int:
    from tui_agent.commands.serve.server import listen, make_server

    max_sessions = getattr(args, "max_sessions", DEFAULT_MAX_SESSIONS)
    if max_sessions < 1:
        print("error: --max-sessions must be at least 1", file=sys.stderr)
        return 2
    public = None
    if getattr(args, "public_url", None) is not None:
        try:
            public = parse_public_url(args.public_url)
        except PublicURLError as exc:
            print(f"error: --public-url: {exc}", file=sys.stderr)
            return 2
    try:
        session = open_session(vault_arg)
        session.profile(args.profile)
    except ProfileError as exc:
        print(f"error: profile {exc}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        session.close()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        print(f"error: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 1
    port = int(sock.getsockname()[1])
    guard = Guard(token=token, bind_host=args.host, port=port, public=public)
    # The app draws for the page's xterm.js and its image addon (Sixel at the page's cell size).
    os.environ["TUI_AGENT_SERVED"] = "1"
    os.environ[MEDIA_ENV] = "/media/"
    vault_root = session.vault.root
    local = f"http://{url_host(primary_address(args.host))}:{port}"
    url = f"{public.origin if public else local}/?token={token}"

    def banner() -> None:
        """Printed only once the socket accepts connections, with the real port."""
        print(f"tui-agent serving vault {vault_root}", flush=True)
        if public is not None:
            print(f"Listening on {local} for the reverse proxy of {public.origin}", flush=True)
        print(f"Open: {url}", flush=True)
        if not is_loopback(args.host):
            print(
                f"WARNING: listening on {args.host}, not loopback. Anyone with the token who can reach this "
                "address gets an agent that can read your vault and use your API key.",
                file=sys.stderr,
                flush=True,
            )
        if public is not None and public.scheme == "http" and not is_loopback(public.host):
            print(
                f"WARNING: {public.origin} is plain http: the token crosses the network in clear. "
                "Put TLS at the proxy (https://).",
                file=sys.stderr,
                flush=True,
            )
        sessions = "1 browser session" if max_sessions == 1 else f"{max_sessions} browser sessions"
        print(f"Up to {sessions} at once. Press Ctrl+C to stop.", flush=True)

    command = app_command(str(vault_root), args.profile)
    server = make_server(command, guard, vault_root, max_sessions, banner)
    session.close()
    server.serve(sock=sock)
    return 0
