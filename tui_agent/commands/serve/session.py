"""One browser session: the websocket (token checked as a subprotocol by the guard) and its app process.

textual-serve's ``AppService`` runs the app; ours adds two things:

- the page's cell size in CSS pixels (``?cell=WxH`` on the upgrade) goes to the app as
  ``TUI_AGENT_CELL_PX``: the page's image addon maps one Sixel pixel to one CSS pixel, so the app
  draws pictures at their real size with the encoder it uses in terminals;
- links the app opens on this server (``/media/``, ``/gallery/``) and downloads reach the page
  signed (``Guard.sign``), over this session's own websocket: the page holds no cookie, and the
  links work only for a while.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tui_agent.commands.serve.guard import PROTOCOL, Guard

log = logging.getLogger("tui_agent.serve")
CELL_ENV = "TUI_AGENT_CELL_PX"
_CELL = re.compile(r"\d{1,3}(\.\d{1,2})?x\d{1,3}(\.\d{1,2})?")
SIGNED_OPEN = ("/media/", "/gallery/")


def to_int(text: str | None, default: int, low: int = 1, high: int = 1000) -> int:
    return int(text) if text and text.isdigit() and low <= int(text) <= high else default


def cell_size(text: str | None) -> str | None:
    """``"9.63x19"`` as sent by the page, or None for anything else."""
    return text if text and _CELL.fullmatch(text) else None


def signed_open_url(guard: Guard, url: str) -> str:
    """A link of ours (``/media/...``, ``/gallery/...``) signed; anything else unchanged."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path.startswith(SIGNED_OPEN):
        return url
    return guard.sign(unquote(parts.path), parts.query)


def session_service(guard: Guard, cell: str | None) -> type:
    from textual_serve.app_service import AppService

    class SessionService(AppService):
        def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
            environment: dict[str, str] = super()._build_environment(width=width, height=height)
            environment.pop(CELL_ENV, None)
            if cell is not None:
                environment[CELL_ENV] = cell
            return environment

        async def on_meta(self, data: bytes) -> None:
            meta: dict[str, Any] = json.loads(data)
            kind = meta.get("type")
            if kind == "open_url":
                url = signed_open_url(guard, str(meta.get("url", "")))
                opened = {"url": url, "new_tab": bool(meta.get("new_tab"))}
                await self.remote_write_str(json.dumps(["open_url", opened]))
            elif kind == "deliver_file_start":
                try:
                    key = str(meta["key"])
                    await self._download_manager.create_download(
                        app_service=self,
                        delivery_key=key,
                        file_name=Path(meta["path"]).name,
                        open_method=meta["open_method"],
                        mime_type=meta["mime_type"],
                        encoding=meta["encoding"],
                        name=meta.get("name", None),
                    )
                except KeyError:
                    log.error("Missing key in `deliver_file_start` meta packet")
                    return
                await self.remote_write_str(json.dumps(["download_url", guard.sign(f"/download/{key}")]))
            else:
                await super().on_meta(data)

    return SessionService


async def run_session(server: Any, guard: Guard, request: Any) -> Any:
    """textual-serve's ``handle_websocket`` with the subprotocol answered and our ``AppService``."""
    from aiohttp import web

    websocket = web.WebSocketResponse(heartbeat=15, protocols=(PROTOCOL,))
    width = to_int(request.query.get("width"), 80)
    height = to_int(request.query.get("height"), 24)
    service_class = session_service(guard, cell_size(request.query.get("cell")))
    app_service = None
    try:
        await websocket.prepare(request)
        app_service = service_class(
            server.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=server.download_manager,
            debug=server.debug,
        )
        await app_service.start(width, height)
        try:
            await server._process_messages(websocket, app_service)
        finally:
            await app_service.stop()
    except asyncio.CancelledError:
        await websocket.close()
    except Exception as error:
        log.exception(error)
    finally:
        if app_service is not None:
            await app_service.stop()
    return websocket
