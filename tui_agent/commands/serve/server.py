"""textual-serve's server behind the guard: every route checked, sessions capped, quiet about the token."""

from __future__ import annotations

import asyncio
import html
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tui_agent.commands.serve.guard import SAFE_FETCH_SITES, Guard

log = logging.getLogger("tui_agent.serve")
Handler = Callable[[Any], Awaitable[Any]]
# What the browser may do with our responses: no framing by other pages, no sniffing, no referrer.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0 picks a free one); OSError if the address is taken or not ours."""
    info = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = info[0]
    return socket.create_server(address, family=family, backlog=128)


def make_server(command: str, guard: Guard, vault_root: Path, max_sessions: int, banner: Callable[[], None]) -> Any:
    from aiohttp import web
    from aiohttp.abc import AbstractAccessLogger
    from textual_serve.server import Server
    from yarl import URL

    from tui_agent.commands.serve.gallery import add_gallery_route
    from tui_agent.commands.serve.media import add_media_routes

    class PathOnlyAccessLog(AbstractAccessLogger):
        """The access log without query strings (the token travels in one) or referrers."""

        def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
            self.logger.info('%s "%s %s" %s', request.remote, request.method, request.path, response.status)

        @property
        def enabled(self) -> bool:
            return self.logger.isEnabledFor(logging.INFO)

    full_text = (
        f"503: all {max_sessions} sessions of this tui-agent are in use (tui-agent serve --max-sessions "
        f"{max_sessions}). Close another tab of it, then reload this page.\n"
    )

    class GuardedServer(Server):
        sessions = 0

        async def _make_app(self) -> web.Application:
            app = web.Application(middlewares=[self._guard])
            import aiohttp_jinja2
            import jinja2

            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get("/", self.handle_index, name="index"),
                    web.get("/ws", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),
                    web.static("/static", self.statics_path, show_index=False, name="static"),
                ]
            )
            add_media_routes(app, vault_root)
            add_gallery_route(app, vault_root)
            app.on_response_prepare.append(self._headers)
            return app

        async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)

        @web.middleware
        async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
            query_token = request.query.get("token")
            why = guard.refusal(request.headers, query_token, request.cookies.get(guard.cookie_name))
            if why is not None:
                log.warning("refused %s %s from %s: %s", request.method, request.path, request.remote, why)
                return web.Response(status=403, text=f"403 Forbidden: {why}.\n")
            if query_token is not None and request.method == "GET" and request.path != "/ws":
                # Trade the token for the cookie and take it out of the address bar and the history.
                query = [(key, value) for key, value in request.query.items() if key != "token"]
                location = URL.build(path="/" + request.path.lstrip("/"), query=query)
                if request.headers.get("Sec-Fetch-Site", "none") in SAFE_FETCH_SITES:
                    redirect = web.Response(status=303, headers={"Location": str(location)})
                else:
                    # Clicked on another site's page: a redirect would stay "cross-site" and the browser
                    # would withhold the SameSite=Strict cookie; a page of ours moving on is same-origin.
                    target = html.escape(str(location))
                    redirect = web.Response(
                        text=f'<!doctype html><meta http-equiv="refresh" content="0;url={target}">',
                        content_type="text/html",
                    )
                redirect.set_cookie(guard.cookie_name, guard.cookie_value, httponly=True, samesite="Strict")
                return redirect
            response: web.StreamResponse = await handler(request)
            return response

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            import aiohttp_jinja2

            if self.sessions >= max_sessions:
                return web.Response(status=503, text=full_text)
            origin = guard.origin_for(request.headers.get("Host"))
            assert origin is not None  # the guard refused any other Host
            font_size = request.query.get("fontsize", "16")
            context = {
                "font_size": int(font_size) if font_size.isdigit() and 4 <= int(font_size) <= 64 else 16,
                # Built from the checked Host (our own address and port), never copied from a header.
                "app_websocket_url": "ws" + origin.removeprefix("http") + "/ws",
                "config": {"static": {"url": "/static/"}},
                "application": {"name": self.title},
            }
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            if self.sessions >= max_sessions:
                log.warning("refused a new session: all %d in use (--max-sessions)", max_sessions)
                return web.Response(status=503, text=full_text)  # type: ignore[return-value]
            self.sessions += 1
            try:
                response: web.WebSocketResponse = await super().handle_websocket(request)
                return response
            finally:
                self.sessions -= 1

        def initialize_logging(self) -> None:
            """textual-serve's console log, but tracebacks without local variables (a token can be one)."""
            from rich.logging import RichHandler

            handler = RichHandler(show_path=False, show_time=False, rich_tracebacks=True, console=self.console)
            logging.basicConfig(level="INFO", format="%(message)s", handlers=[handler])

        async def on_startup(self, app: web.Application) -> None:
            pass  # the banner is printed once the socket accepts connections

        def serve(self, debug: bool = False, sock: socket.socket | None = None) -> None:
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            web.run_app(
                self._make_app(),
                sock=sock,
                handle_signals=False,
                loop=loop,
                print=lambda *args: banner(),
                access_log_class=PathOnlyAccessLog,
            )

    return GuardedServer(command, host=guard.bind_host, port=guard.port, title="tui-agent")
