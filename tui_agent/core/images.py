"""Image file checks shared by the image tool and attachments (Pillow imported lazily)."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path
from typing import IO

MAX_PIXELS = 40_000_000


class ImageCheckError(ValueError):
    pass


def verify_image(path: Path, allowed_formats: tuple[str, ...] = ("PNG", "JPEG", "GIF", "WEBP")) -> tuple[str, int, int]:
    """Open ``path`` with Pillow and fully decode it; return (format, width, height).

    Refuses non-images, truncated files, other formats and decompression bombs.
    """
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                fmt = image.format or ""
                width, height = image.size
                if width * height > MAX_PIXELS:
                    raise ImageCheckError(f"image too large: {width}x{height} pixels")
                image.load()
    except ImageCheckError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageCheckError("refused: decompression bomb (too many pixels)") from None
    except Exception as exc:
        raise ImageCheckError(f"not a valid image ({exc.__class__.__name__}: {exc})") from None
    if fmt not in allowed_formats:
        raise ImageCheckError(f"unsupported image format {fmt or 'unknown'} (allowed: {', '.join(allowed_formats)})")
    return fmt, width, height


def to_png(path: Path) -> None:
    """Rewrite ``path`` (a picture ``verify_image`` passed) as a PNG of the same pixels, in place."""
    from PIL import Image

    with Image.open(path) as opened:
        opened.load()
        image: Image.Image = opened
        if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")  # CMYK, YCbCr JPEGs
        image.save(path, "PNG")


# JPEG markers that start a frame and carry its size (SOF0-SOF15 but DHT, JPG and DAC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_BARE = frozenset(range(0xD0, 0xD9)) | {0x01}  # markers without a length (RSTn, SOI, EOI, TEM)
_JPEG_SEGMENTS = 512  # EXIF and ICC segments come first; a frame header further on is not worth the read


def header_size(path: Path) -> tuple[int, int] | None:
    """Width and height read from the file's first bytes (PNG, GIF, JPEG, WebP), without Pillow.

    For laying a picture out before it is decoded; nothing is checked beyond the header
    (verify_image does that). ``None`` when the header is not one of these or looks wrong."""
    try:
        with path.open("rb") as file:
            head = file.read(32)
            if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
                width, height = struct.unpack(">II", head[16:24])
            elif head[:6] in (b"GIF87a", b"GIF89a"):
                width, height = struct.unpack("<HH", head[6:10])
            elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
                width, height = _webp_size(head)
            elif head[:2] == b"\xff\xd8":
                file.seek(2)
                width, height = _jpeg_size(file)
            else:
                return None
    except (OSError, struct.error, ValueError):
        return None
    return (width, height) if width > 0 and height > 0 else None


def _webp_size(head: bytes) -> tuple[int, int]:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":  # lossy: the key frame's start code, then the size
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20] == 0x2F:  # lossless: 14 bits each, minus one
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: the canvas, 24 bits each, minus one
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    raise ValueError("not a WebP header")


def _jpeg_size(file: IO[bytes]) -> tuple[int, int]:
    for _ in range(_JPEG_SEGMENTS):
        byte = file.read(1)
        if byte != b"\xff":
            break  # not at a marker: not a JPEG this reader follows
        while byte == b"\xff":  # fill bytes before the marker's code
            byte = file.read(1)
        if not byte:
            break
        marker = byte[0]
        if marker in _JPEG_BARE:
            continue
        (length,) = struct.unpack(">H", file.read(2))
        if marker in _JPEG_FRAMES:
            _precision, height, width = struct.unpack(">BHH", file.read(5))
            return width, height
        if length < 2:
            break
        file.seek(length - 2, 1)
    raise ValueError("no JPEG frame header")
