"""``/media/<path>``: the vault's images, full size, to the page that holds the token.

The same path rules as the image tools (relative, no ``..``, no hidden names, an image extension,
symlinks resolved and kept inside ``media/``), then the file itself decides: it is opened without
following a last-moment symlink, must be a regular file, and must decode as PNG, JPEG, GIF or
WebP; the content type comes from its bytes, not its name. No directory is ever listed.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import stat
from pathlib import Path
from typing import Any

from tui_agent.core import media_files
from tui_agent.core.tools.vault_paths import SHOW_RE, PathRejected, media_path
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.serve")
MAX_BYTES = 64 * 1024 * 1024
MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
INVALID = "invalid path: must be an image under media/ (png, jpg, gif or webp), relative, no '..'"


class MediaError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def read_media(vault: Vault, relative: str) -> tuple[bytes, str]:
    """The bytes and content type of ``media/<relative>``, or MediaError(status, reason)."""
    try:
        target = media_path(vault, "media/" + relative, SHOW_RE, INVALID)
    except PathRejected as exc:
        raise MediaError(400, str(exc)) from None
    try:
        # From this vault's media/, which with PostgreSQL is a cache: a picture made on another
        # machine is fetched into it first.
        media_files.local_file(vault.root, "media/" + target.relative_to(vault.media.resolve()).as_posix())
    except media_files.MediaUnavailable as exc:
        if not exc.missing:
            log.warning("/media/%s: %s", relative, exc)
            raise MediaError(503, str(exc)) from None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise MediaError(404, "not found") from None
    except OSError:
        raise MediaError(400, INVALID) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a directory, a FIFO, a device: never listed, never read
        os.close(fd)
        raise MediaError(404, "not found")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > MAX_BYTES:
            raise MediaError(413, "image too large to serve")
        proc = Path(f"/proc/self/fd/{fd}")
        if proc.exists() and not Path(os.readlink(proc)).is_relative_to(vault.media.resolve()):
            raise MediaError(400, INVALID)  # swapped for a link after the check
        data = handle.read(MAX_BYTES + 1)
    return data, image_type(data)


def image_type(data: bytes) -> str:
    """The content type of an image decoded from ``data``; MediaError(415) for anything else."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt = image.format or ""
            image.verify()
    except Exception:
        raise MediaError(415, "not an image") from None
    if fmt not in MIME:
        raise MediaError(415, f"not a served image type ({fmt})")
    return MIME[fmt]


def add_media_routes(app: Any, vault_root: Path) -> None:
    from aiohttp import web

    vault = Vault(vault_root)

    async def handle_media(request: web.Request) -> web.StreamResponse:
        try:
            data, mime = await asyncio.to_thread(read_media, vault, request.match_info["path"])
        except MediaError as exc:
            return web.Response(status=exc.status, text=f"{exc.status}: {exc.reason}\n")
        name = Path(request.match_info["path"]).name
        disposition = "attachment" if request.query.get("download") else "inline"
        return web.Response(
            body=data,
            headers={
                "Content-Type": mime,
                "Content-Disposition": f'{disposition}; filename="{name}"',
                "Content-Security-Policy": "default-src 'none'; sandbox",
                "Cache-Control": "private, no-store",
            },
        )

    app.router.add_get("/media/{path:.+}", handle_media, name="media")
