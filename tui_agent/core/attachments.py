"""User attachments: a local file or a URL becomes a verified image under ``media/uploads/``."""

from __future__ import annotations

import asyncio
import hashlib
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.vault import Vault

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 30.0
_EXT = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp"}


class AttachmentError(ValueError):
    pass


async def import_image(vault: Vault, source: str) -> str:
    """Return the vault-relative path of ``source`` (path or http(s) URL) after checking it is an image."""
    if re.match(r"^https?://", source, re.IGNORECASE):
        tmp = await _download(source, vault.uploads)
        name = Path(urlparse(source).path).stem or "image"
    else:
        local = Path(source).expanduser()
        if not local.is_absolute() and not local.exists() and (vault.root / source).exists():
            local = vault.root / source
        if not local.is_file():
            raise AttachmentError(f"attach: no such file: {source}")
        try:
            if local.resolve().is_relative_to(vault.media.resolve()):
                verify_image(local.resolve())
                return vault.relative(local)
        except ImageCheckError as exc:
            raise AttachmentError(f"attach: {source}: {exc}") from None
        tmp = Path(tempfile.mkstemp(prefix="attach-", dir=vault.uploads)[1])
        await asyncio.to_thread(shutil.copyfile, local, tmp)
        name = local.stem
    try:
        fmt, _, _ = await asyncio.to_thread(verify_image, tmp)
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:12]
        safe = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:40] or "image"
        target = vault.uploads / f"{safe}-{digest}{_EXT[fmt]}"
        if target.exists():
            tmp.unlink()
        else:
            tmp.replace(target)
        return vault.relative(target)
    except ImageCheckError as exc:
        tmp.unlink(missing_ok=True)
        raise AttachmentError(f"attach: {source}: {exc}") from None


async def _download(url: str, folder: Path) -> Path:
    import httpx

    handle, name = tempfile.mkstemp(prefix="download-", dir=folder)
    tmp = Path(name)
    try:
        with open(handle, "wb") as out:
            async with httpx.AsyncClient(timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as client:
                async with client.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise AttachmentError(f"attach: {url} answered HTTP {response.status_code}")
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if kind and not kind.startswith("image/") and kind != "application/octet-stream":
                        raise AttachmentError(f"attach: {url} is {kind}, not an image")
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_DOWNLOAD_BYTES:
                            raise AttachmentError(f"attach: {url} is larger than {MAX_DOWNLOAD_BYTES // 1_048_576} MB")
                        out.write(chunk)
    except AttachmentError:
        tmp.unlink(missing_ok=True)
        raise
    except httpx.HTTPError as exc:
        tmp.unlink(missing_ok=True)
        raise AttachmentError(f"attach: cannot download {url}: {exc.__class__.__name__}: {exc}") from None
    return tmp
