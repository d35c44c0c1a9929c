"""A small Sixel decoder for tests: DCS ... q, raster attributes, colour definitions (RGB %),
colour select, ``!N`` repeat, ``$`` carriage return, ``-`` next band.

It records whether any colour was (re)defined after the first pixel data (xterm mis-draws that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from PIL import Image

_NUMBER = re.compile(r"\d+")


@dataclass
class Decoded:
    image: Image.Image
    palette: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    defined_after_pixels: bool = False


def decode(data: str, background: tuple[int, int, int] = (255, 0, 255)) -> Decoded:
    if not data.startswith("\x1bP") or not data.endswith("\x1b\\"):
        raise ValueError("not a DCS string")
    body = data[2:-2]
    q = body.index("q")
    body = body[q + 1 :]
    pos = 0
    width = height = 0
    if body.startswith('"'):
        end = pos + 1
        while end < len(body) and (body[end].isdigit() or body[end] == ";"):
            end += 1
        _, _, width, height = (int(v) for v in body[1:end].split(";"))
        pos = end
    pixels: dict[tuple[int, int], int] = {}
    palette: dict[int, tuple[int, int, int]] = {}
    colour = 0
    x = y = 0
    seen_pixels = False
    defined_after = False
    while pos < len(body):
        ch = body[pos]
        if ch == "#":
            end = pos + 1
            while end < len(body) and (body[end].isdigit() or body[end] == ";"):
                end += 1
            parts = [int(v) for v in body[pos + 1 : end].split(";")]
            colour = parts[0]
            if len(parts) == 5:
                if parts[1] != 2:
                    raise ValueError("only RGB colour definitions are supported")
                palette[colour] = tuple(round(v * 255 / 100) for v in parts[2:])  # type: ignore[assignment]
                defined_after = defined_after or seen_pixels
            pos = end
            continue
        if ch == "$":
            x = 0
            pos += 1
            continue
        if ch == "-":
            x = 0
            y += 6
            pos += 1
            continue
        count = 1
        if ch == "!":
            match = _NUMBER.match(body, pos + 1)
            assert match is not None
            count = int(match.group())
            pos = match.end()
            ch = body[pos]
        value = ord(ch) - 0x3F
        if not 0 <= value < 64:
            raise ValueError(f"unexpected byte {ch!r} at {pos}")
        seen_pixels = True
        for _ in range(count):
            for bit in range(6):
                if value & (1 << bit):
                    pixels[(x, y + bit)] = colour
            x += 1
        pos += 1
    width = width or max(px for px, _ in pixels) + 1
    height = height or max(py for _, py in pixels) + 1
    image = Image.new("RGB", (width, height), background)
    for (px, py), c in pixels.items():
        if px < width and py < height:
            image.putpixel((px, py), palette[c])
    return Decoded(image, palette, defined_after)
