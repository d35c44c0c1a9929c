"""textual-serve's server behind the guard: every route checked, sessions capped, quiet about the token."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tui_agent.commands.serve.guard import Guard

HERE = Path(__file__).parent
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

    from tui_agent.commands.serve.gallery import add_gallery_route
    from tui_agent.commands.serve.media import add_media_routes

    class PathOnlyAccessLog(AbstractAccessLogger):
        """The access log without query strings (the token travels in one) or referrers."""

        def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
            self.logger.info('%s "%s %s" %s', request.remote, request.method, request.path, response.status)

        @property
        def enabled(self) -> bool:
            return self.logger.isEnabledFor(logging.INFO)

    in_use = (
        "the one session of this tui-agent is in use"
        if max_sessions == 1
        else (f"all {max_sessions} sessions of this tui-agent are in use")
    )
    full_text = (
        f"503: {in_use} (tui-agent serve --max-sessions "
        f"{max_sessions}). Close another tab of it, then reload this page.\n"
    )

    class GuardedServer(Server):
        sessions = 0

        async def _make_app(self) -> web.Application:
            app = web.Application(middlewares=[self._guard])
            import aiohttp_jinja2
            import jinja2

            # Our page and its script (web/, built with the image addon), not textual-serve's.
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(HERE / "templates"))
            app.add_routes(
                [
                    web.get("/", self.handle_index, name="index"),
                    web.get("/ws", self.handle_websocket, name="websocket"),
                    web.get("/download/{key}", self.handle_download, name="download"),
                    web.static("/static", HERE / "static", show_index=False, name="static"),
                ]
            )
            add_media_routes(app, vault_root)
            add_gallery_route(app, vault_root, guard.sign)
            app.on_response_prepare.append(self._headers)
            return app

        async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)

        @web.middleware
        async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
            why = guard.refusal(request.method, request.path, request.headers, request.query)
            if why is not None:
                log.warning("refused %s %s from %s: %s", request.method, request.path, request.remote, why)
                return web.Response(status=403, text=f"403 Forbidden: {why}.\n")
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
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            response.headers["Cache-Control"] = "no-store"
            response.headers["Content-Security-Policy"] = (
                # The image addon decodes Sixel in WebAssembly (its own, bundled): 'wasm-unsafe-eval'.
                "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data: blob:; font-src 'self'; "
                f"connect-src 'self' {context['app_websocket_url']}; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'"
            )
            return response

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            if self.sessions >= max_sessions:
                log.warning("refused a new session: all %d in use (--max-sessions)", max_sessions)
                return web.Response(status=503, text=full_text)  # type: ignore[return-value]
            self.sessions += 1
            try:
                from tui_agent.commands.serve.session import run_session

                response: web.WebSocketResponse = await run_session(self, guard, request)
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
