"""Bounded downloads: a size cap on the decoded bytes, one content encoding at most, a total deadline.

A hostile server can send a small gzip body that decodes to gigabytes (stacked encodings
multiply), or one byte every few seconds forever. Bytes are decoded here in bounded pieces and
counted as they stream; the whole download has one deadline.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

CHUNK = 64 * 1024
SUPPORTED_ENCODINGS = ("gzip", "x-gzip", "deflate")


class DownloadError(ValueError):
    """``str()`` is a one-line message for the user (without the ``attach:`` prefix)."""


class BoundedDecoder:
    """Decodes one content encoding, never producing more than ``CHUNK`` bytes per piece."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._z: zlib._Decompress | None = None
        self._raw_deflate = False
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            for start in range(0, len(data), CHUNK):
                yield data[start : start + CHUNK]
            return
        pending = data
        while True:
            try:
                out = self._z.decompress(pending, CHUNK)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._raw_deflate:
                    # "deflate" is often sent without the zlib wrapper: start again as raw deflate.
                    self._raw_deflate = True
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise DownloadError(f"the {self.encoding} body is corrupt ({exc})") from None
            if out:
                yield out
            pending = self._z.unconsumed_tail
            if not pending and len(out) < CHUNK:
                return


def encoding_of(values: list[str]) -> str:
    """The one content encoding to decode ("identity" for none); refuse stacked or unknown ones."""
    tokens = [v.strip().lower() for v in values if v.strip() and v.strip().lower() != "identity"]
    if len(tokens) > 1:
        raise DownloadError(f"refused: stacked content encodings ({', '.join(tokens)})")
    if tokens and tokens[0] not in SUPPORTED_ENCODINGS:
        raise DownloadError(f"refused: unsupported content encoding {tokens[0]!r}")
    return tokens[0] if tokens else "identity"


async def download(
    url: str, out: BinaryIO, *, max_bytes: int, read_timeout_s: float, deadline_s: float, accept: str = "*/*"
) -> str:
    """Stream ``url`` into ``out``; return its content type. Raises DownloadError with a clear reason."""
    import httpx2  # the openai SDK's HTTP stack: one stack and one TLS context for the whole app

    try:
        async with asyncio.timeout(deadline_s):
            return await _stream(url, out, max_bytes, read_timeout_s, accept)
    except TimeoutError:
        raise DownloadError(f"took longer than {deadline_s:g}s in total: stopped") from None
    except httpx2.TimeoutException:
        raise DownloadError(f"no data for {read_timeout_s:g}s: stopped") from None
    except httpx2.HTTPError as exc:
        raise DownloadError(f"cannot download: {exc.__class__.__name__}: {exc}") from None
    except OSError as exc:
        raise DownloadError(f"cannot save it: {exc.strerror or exc}") from None


async def _stream(url: str, out: BinaryIO, max_bytes: int, read_timeout_s: float, accept: str) -> str:
    import httpx2

    from tui_agent.core import tls

    limit_mb = max_bytes / 1_048_576
    headers = {"Accept": accept, "Accept-Encoding": "gzip, deflate"}
    async with httpx2.AsyncClient(
        timeout=read_timeout_s, follow_redirects=True, max_redirects=5, verify=tls.context()
    ) as client:
        async with client.stream("GET", url, headers=headers) as response:
            if response.status_code != 200:
                raise DownloadError(f"answered HTTP {response.status_code}")
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if accept == "image/*" and kind and not kind.startswith("image/") and kind != "application/octet-stream":
                raise DownloadError(f"is {kind}, not an image")
            decoder = BoundedDecoder(encoding_of(response.headers.get_list("content-encoding", split_commas=True)))
            length = response.headers.get("content-length", "")
            if decoder.encoding == "identity" and length.isdigit() and int(length) > max_bytes:
                raise DownloadError(f"is larger than {limit_mb:g} MB ({int(length):,} bytes)")
            size = 0
            async for raw in response.aiter_raw(CHUNK):
                for piece in decoder.feed(raw):
                    size += len(piece)
                    if size > max_bytes:
                        raise DownloadError(f"is larger than {limit_mb:g} MB")
                    out.write(piece)
            return kind


def copy_bounded(source: Path, target: Path, max_bytes: int) -> None:
    """Copy a local file of at most ``max_bytes`` (checked before and while copying)."""
    limit_mb = max_bytes / 1_048_576
    size = os.stat(source).st_size
    if size > max_bytes:
        raise DownloadError(f"is larger than {limit_mb:g} MB ({size:,} bytes)")
    copied = 0
    with open(source, "rb") as src, open(target, "wb") as dst:
        while block := src.read(CHUNK):
            copied += len(block)
            if copied > max_bytes:  # it grew while we copied
                raise DownloadError(f"is larger than {limit_mb:g} MB")
            dst.write(block)
