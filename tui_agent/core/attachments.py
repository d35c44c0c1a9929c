"""User attachments: a local file or a URL becomes a verified image under ``media/uploads/``."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from tui_agent.core import media_files
from tui_agent.core.download import DownloadError, copy_bounded, download
from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.store.errors import StoreError
from tui_agent.core.vault import Vault

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 30.0  # with no data at all
DOWNLOAD_DEADLINE_S = 120.0  # for the whole download, however it trickles
_EXT = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp"}


class AttachmentError(ValueError):
    pass


async def import_image(vault: Vault, source: str) -> str:
    """Return the vault-relative path of ``source`` (path or http(s) URL) after checking it is an image."""
    if re.match(r"^https?://", source, re.IGNORECASE):
        name = Path(urlparse(source).path).stem or "image"
        tmp = _temp(vault, "download-")
        fetch = _download(source, tmp)
    else:
        local = Path(source).expanduser()
        if not local.is_absolute() and not local.exists() and source.startswith("media/"):
            # A vault picture another machine made (PostgreSQL): fetched into this vault's media/.
            try:
                await asyncio.to_thread(media_files.local_file, vault.root, source)
            except media_files.MediaUnavailable as exc:
                if not exc.missing:
                    raise AttachmentError(f"attach: {exc}") from None
        if not local.is_absolute() and not local.exists() and (vault.root / source).exists():
            local = vault.root / source
        if not local.is_file():
            raise AttachmentError(f"attach: no such file: {source}")
        try:
            if local.resolve().is_relative_to(vault.media.resolve()):
                verify_image(local.resolve())
                relative = vault.relative(local)
                await asyncio.to_thread(_store, vault, relative, source)  # put there by hand: other machines see it too
                return relative
        except ImageCheckError as exc:
            raise AttachmentError(f"attach: {source}: {exc}") from None
        name = local.stem
        tmp = _temp(vault, "attach-")
        fetch = _copy(source, local, tmp)
    try:
        await fetch
        return await asyncio.to_thread(_keep, vault, tmp, name, source)
    finally:
        tmp.unlink(missing_ok=True)  # whatever happened, no temp file is left behind


def _temp(vault: Vault, prefix: str) -> Path:
    handle, name = tempfile.mkstemp(prefix=prefix, dir=vault.uploads)
    os.close(handle)
    return Path(name)


async def _download(url: str, tmp: Path) -> None:
    try:
        with open(tmp, "wb") as out:
            await download(
                url,
                out,
                max_bytes=MAX_DOWNLOAD_BYTES,
                read_timeout_s=DOWNLOAD_TIMEOUT_S,
                deadline_s=DOWNLOAD_DEADLINE_S,
                accept="image/*",
            )
    except DownloadError as exc:
        raise AttachmentError(f"attach: {url}{_phrase(exc)}") from None


async def _copy(source: str, local: Path, tmp: Path) -> None:
    try:
        await asyncio.to_thread(copy_bounded, local, tmp, MAX_DOWNLOAD_BYTES)
    except DownloadError as exc:
        raise AttachmentError(f"attach: {source}{_phrase(exc)}") from None
    except OSError as exc:
        raise AttachmentError(f"attach: cannot read {source}: {exc.strerror or exc}") from None


def _keep(vault: Vault, tmp: Path, name: str, source: str) -> str:
    """Verify the temp file and give it its content-addressed name under uploads/."""
    try:
        fmt, _, _ = verify_image(tmp)
    except ImageCheckError as exc:
        raise AttachmentError(f"attach: {source}: {exc}") from None
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:40] or "image"
    target = vault.uploads / f"{safe}-{digest}{_EXT[fmt]}"
    if not target.exists():
        tmp.replace(target)
    relative = vault.relative(target)
    _store(vault, relative, source)
    return relative


def _store(vault: Vault, relative: str, source: str) -> None:
    """With PostgreSQL the picture goes into the database too (other machines show it). The name
    holds the picture's sha256, so a path taken already holds these very bytes."""
    try:
        kept = media_files.keep(vault.root, relative)
    except (StoreError, OSError) as exc:
        raise AttachmentError(f"attach: {source}: the picture could not be stored: {exc}") from None
    if not kept:
        raise AttachmentError(
            f"attach: {source}: the database holds another picture under {relative} (made on another "
            "machine): rename the file and attach it again"
        )


def _phrase(exc: DownloadError) -> str:
    """``is larger than ...`` reads on after the URL; other reasons follow a colon."""
    text = str(exc)
    return f" {text}" if text.startswith(("is ", "answered ", "took ")) else f": {text}"
