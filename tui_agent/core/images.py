"""Image file checks shared by the image tool and attachments (Pillow imported lazily)."""

from __future__ import annotations

import warnings
from pathlib import Path

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
