"""Downloads (/attach URL) against hostile loopback HTTP servers, and oversized local files."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fake_openai import POLL_S, png_bytes

from tui_agent.core import attachments
from tui_agent.core.attachments import AttachmentError, import_image
from tui_agent.core.download import CHUNK, BoundedDecoder, DownloadError, encoding_of
from tui_agent.core.vault import Vault


def gzip_of_zeros(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes, made piecewise (never ``size`` bytes in memory)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    parts = [z.compress(block) for _ in range(size // len(block))]
    parts.append(z.flush())
    return b"".join(parts)


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    routes: dict[str, Any] = {}
    served: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        Hostile.served.append(self.path)
        route = self.routes[self.path]
        headers, body = route["headers"], route.get("body", b"")
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        if not any(name.lower() == "content-length" for name, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if "trickle_s" in route:  # one byte at a time, forever (or until the client gives up)
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(route["trickle_s"])
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def hostile() -> Iterator[tuple[str, dict[str, Any]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Hostile.routes
    server.shutdown()
    server.server_close()
    Hostile.routes.clear()
    Hostile.served.clear()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path / "vault").init()


def leftovers(vault: Vault) -> list[str]:
    return sorted(p.name for p in vault.uploads.iterdir())


async def refused(vault: Vault, source: str) -> str:
    with pytest.raises(AttachmentError) as caught:
        await import_image(vault, source)
    assert leftovers(vault) == []  # no download-* or attach-* file stays behind
    return str(caught.value)


PNG = [("Content-Type", "image/png")]


@pytest.mark.slow
async def test_stacked_gzip_is_refused_before_decoding(vault, hostile):
    base, routes = hostile
    body = gzip.compress(gzip_of_zeros(256 << 20))  # 256 MB inside two layers: a few hundred bytes
    assert len(body) < 4096
    routes["/two.png"] = {"headers": [*PNG, ("Content-Encoding", "gzip, gzip")], "body": body}
    routes["/twice.png"] = {"headers": [*PNG, ("Content-Encoding", "gzip"), ("Content-Encoding", "gzip")], "body": body}
    message = await refused(vault, f"{base}/two.png")
    assert message == f"attach: {base}/two.png: refused: stacked content encodings (gzip, gzip)"
    message = await refused(vault, f"{base}/twice.png")
    assert message.endswith("refused: stacked content encodings (gzip, gzip)")


@pytest.mark.slow
async def test_a_gzip_bomb_stops_at_the_cap(vault, hostile):
    base, routes = hostile
    body = gzip_of_zeros(200 << 20)  # ~200 KB that decode to 200 MB
    routes["/bomb.png"] = {"headers": [*PNG, ("Content-Encoding", "gzip")], "body": body}
    message = await refused(vault, f"{base}/bomb.png")
    assert message == f"attach: {base}/bomb.png is larger than 20 MB"


def test_the_decoder_yields_bounded_pieces_and_stops_when_asked():
    decoder = BoundedDecoder("gzip")
    pieces = decoder.feed(gzip_of_zeros(64 << 20))
    total = 0
    for piece in pieces:
        assert 0 < len(piece) <= CHUNK
        total += len(piece)
        if total >= 1 << 20:
            break  # the caller stops at its cap: nothing more is decoded
    assert total == 1 << 20
    assert b"".join(BoundedDecoder("gzip").feed(gzip.compress(b"hello" * 1000))) == b"hello" * 1000
    raw_deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = raw_deflate.compress(b"abc" * 100) + raw_deflate.flush()
    assert b"".join(BoundedDecoder("deflate").feed(body)) == b"abc" * 100
    assert b"".join(BoundedDecoder("deflate").feed(zlib.compress(b"xyz" * 9))) == b"xyz" * 9
    with pytest.raises(DownloadError, match="the gzip body is corrupt"):
        list(BoundedDecoder("gzip").feed(b"not gzip at all, really"))


def test_encodings():
    assert encoding_of([]) == "identity"
    assert encoding_of(["identity"]) == "identity"
    assert encoding_of(["GZIP"]) == "gzip"
    with pytest.raises(DownloadError, match=r"stacked content encodings \(deflate, gzip\)"):
        encoding_of(["deflate", "gzip"])
    with pytest.raises(DownloadError, match="unsupported content encoding 'br'"):
        encoding_of(["br"])


async def test_unknown_encoding_is_refused(vault, hostile):
    base, routes = hostile
    routes["/br.png"] = {"headers": [*PNG, ("Content-Encoding", "br")], "body": b"\x0b\x02\x80hello\x03"}
    assert (await refused(vault, f"{base}/br.png")).endswith("refused: unsupported content encoding 'br'")


async def test_a_declared_length_over_the_cap_is_refused_before_the_body(vault, hostile):
    base, routes = hostile
    routes["/huge.png"] = {"headers": [*PNG, ("Content-Length", str(3 << 30))], "body": b""}
    message = await refused(vault, f"{base}/huge.png")
    assert message == f"attach: {base}/huge.png is larger than 20 MB (3,221,225,472 bytes)"


@pytest.mark.slow
async def test_a_trickling_server_meets_the_total_deadline(vault, hostile, monkeypatch):
    # One byte every 0.2 s of a 10,000-byte body would take over half an hour; each read is quick.
    monkeypatch.setattr(attachments, "DOWNLOAD_DEADLINE_S", 1.5)
    base, routes = hostile
    routes["/slow.png"] = {"headers": PNG, "body": png_bytes() + b"\0" * 10_000, "trickle_s": 0.2}
    message = await refused(vault, f"{base}/slow.png")
    assert message == f"attach: {base}/slow.png took longer than 1.5s in total: stopped"


async def test_encoded_images_still_work(vault, hostile):
    base, routes = hostile
    image = png_bytes((1, 2, 3))
    routes["/g.png"] = {"headers": [*PNG, ("Content-Encoding", "gzip")], "body": gzip.compress(image)}
    routes["/d.png"] = {"headers": [*PNG, ("Content-Encoding", "deflate")], "body": zlib.compress(image)}
    for name in ("g", "d"):
        relative = await import_image(vault, f"{base}/{name}.png")
        assert (vault.root / relative).read_bytes() == image
    assert [name[:2] for name in leftovers(vault)] == ["d-", "g-"]  # the images, no temp files


async def test_a_large_local_file_is_refused_before_copying(vault, tmp_path):
    big = tmp_path / "huge.png"
    with open(big, "wb") as handle:
        handle.truncate(3 << 30)  # 3 GB, sparse: costs no disk
    message = await refused(vault, str(big))
    assert message == f"attach: {big} is larger than 20 MB (3,221,225,472 bytes)"


async def test_a_local_file_that_is_not_an_image_leaves_nothing(vault, tmp_path):
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    assert "not a valid image" in await refused(vault, str(text))
