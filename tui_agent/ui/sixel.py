"""Our Sixel encoder: the whole palette before the pixel data, Floyd-Steinberg dithered.

textual-image 0.12.0 defines colour registers in the middle of the pixel data (xterm mis-draws
that as coloured streaks) and quantizes without dithering (posterised). This encoder:

- composites transparency onto the background, quantizes to at most ``colors`` registers with
  Pillow (median cut for the palette, then Floyd-Steinberg to map the pixels onto it);
- writes every ``#n;2;r;g;b`` definition right after the raster attributes, before any sixel;
- then one pass per colour per six-row band, run-length encoded.
"""

from __future__ import annotations

import re

from PIL import Image as PILImage

MAX_REGISTERS = 256
_LONG_RUN = re.compile(rb"(.)\1{3,}")
_TO_SIXEL = bytes(range(0x3F, 0x3F + 64)) + bytes(192)


def quantize(image: PILImage.Image, colors: int, background: tuple[int, int, int] = (0, 0, 0)) -> PILImage.Image:
    """A ``P`` image of at most ``colors`` colours, dithered with Floyd-Steinberg."""
    colors = max(2, min(MAX_REGISTERS, colors))
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        base = PILImage.new("RGBA", rgba.size, (*background, 255))
        image = PILImage.alpha_composite(base, rgba)
    rgb = image.convert("RGB")
    distinct = rgb.getcolors(colors)
    if distinct is not None:  # few colours: exact, no dithering needed
        palette = PILImage.new("P", (1, 1))
        flat = [int(channel) for _, colour in distinct for channel in colour]  # type: ignore[union-attr]
        palette.putpalette(flat + [0] * (768 - len(flat)))
        return rgb.quantize(palette=palette, dither=PILImage.Dither.NONE)
    # The palette comes from a small copy (median cut over every pixel takes seconds); the dither
    # then maps every pixel of the full image onto it.
    sample = rgb.copy()
    sample.thumbnail((192, 192))
    palette = sample.quantize(colors=colors, method=PILImage.Quantize.MEDIANCUT, dither=PILImage.Dither.NONE)
    return rgb.quantize(palette=palette, dither=PILImage.Dither.FLOYDSTEINBERG)


_BIT_TABLES: dict[tuple[int, int], bytes] = {}


def _bit_table(index: int, row: int) -> bytes:
    """A ``bytes.translate`` table: palette index ``index`` becomes the sixel bit of ``row``, all else 0."""
    table = _BIT_TABLES.get((index, row))
    if table is None:
        raw = bytearray(256)
        raw[index] = 1 << row
        table = _BIT_TABLES[(index, row)] = bytes(raw)
    return table


def _percent(value: int) -> int:
    return (value * 100 + 127) // 255


def _rle(data: bytes) -> bytes:
    return _LONG_RUN.sub(lambda m: b"!%d%s" % (m.end() - m.start(), m.group(1)), data)


def encode(image: PILImage.Image, colors: int = MAX_REGISTERS, background: tuple[int, int, int] = (0, 0, 0)) -> str:
    """Sixel data (DCS ... ST) for ``image`` at its own pixel size."""
    indexed = quantize(image, colors, background)
    width, height = indexed.size
    pixels = indexed.tobytes()
    used = sorted(set(pixels))
    raw_palette = indexed.getpalette() or []
    out = bytearray(b'\x1bP0;1;0q"1;1;%d;%d' % (width, height))
    register = {index: n for n, index in enumerate(used)}
    for index in used:
        r, g, b = raw_palette[index * 3 : index * 3 + 3]
        out += b"#%d;2;%d;%d;%d" % (register[index], _percent(r), _percent(g), _percent(b))
    for top in range(0, height, 6):
        rows = [pixels[(top + dy) * width : (top + dy + 1) * width] for dy in range(min(6, height - top))]
        first = True
        for index in sorted(set().union(*rows)):
            # Each row marks this colour's pixels with its bit; the rows' bits never overlap, so
            # adding the rows as big integers ORs them (all in C, no per-pixel Python).
            bits = sum(int.from_bytes(row.translate(_bit_table(index, dy))) for dy, row in enumerate(rows))
            line = bits.to_bytes(width).rstrip(b"\x00").translate(_TO_SIXEL)
            if not first:
                out += b"$"
            first = False
            out += b"#%d" % register[index] + _rle(line)
        out += b"-"
    out += b"\x1b\\"
    return out.decode("ascii")
