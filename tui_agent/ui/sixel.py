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


class BandEncoder:
    """One picture quantized once; Sixel for any rectangle of it, each six-row band encoded once.

    Scrolling moves a picture by whole cells, so the visible part of it changes with every step:
    the bands of a crop are cached by their rows and columns (a cell height that is not a multiple
    of six gives at most six ways to cut the rows into bands), so a picture moving up the screen
    is encoded a few times, not once per step. Every crop defines the whole picture's palette.
    """

    MAX_CACHED = 8 * 1024 * 1024  # bytes of cached bands before the cache starts over

    def __init__(
        self, image: PILImage.Image, colors: int = MAX_REGISTERS, background: tuple[int, int, int] = (0, 0, 0)
    ) -> None:
        indexed = quantize(image, colors, background)
        self.width, self.height = indexed.size
        self._pixels = indexed.tobytes()
        used = sorted(set(self._pixels))
        raw_palette = indexed.getpalette() or []
        self._register = {index: n for n, index in enumerate(used)}
        self._palette = b"".join(
            b"#%d;2;%d;%d;%d" % (self._register[i], *(_percent(c) for c in raw_palette[i * 3 : i * 3 + 3]))
            for i in used
        )
        self._bands: dict[tuple[int, int, int, int], bytes] = {}
        self._cached = 0

    def _band(self, top: int, rows: int, left: int, right: int) -> bytes:
        key = (top, rows, left, right)
        band = self._bands.get(key)
        if band is not None:
            return band
        width = self.width
        lines = [self._pixels[(top + dy) * width + left : (top + dy) * width + right] for dy in range(rows)]
        out = bytearray()
        first = True
        for index in sorted(set().union(*lines)):
            # Each row marks this colour's pixels with its bit; the rows' bits never overlap, so
            # adding the rows as big integers ORs them (all in C, no per-pixel Python).
            bits = sum(int.from_bytes(line.translate(_bit_table(index, dy))) for dy, line in enumerate(lines))
            data = bits.to_bytes(right - left).rstrip(b"\x00").translate(_TO_SIXEL)
            if not first:
                out += b"$"
            first = False
            out += b"#%d" % self._register[index] + _rle(data)
        band = bytes(out) + b"-"
        if self._cached > self.MAX_CACHED:
            self._bands.clear()
            self._cached = 0
        self._bands[key] = band
        self._cached += len(band)
        return band

    def encode(self, box: tuple[int, int, int, int] | None = None) -> str:
        """Sixel data (DCS ... ST) for ``box`` (left, top, right, bottom in pixels; the whole picture if None)."""
        left, top, right, bottom = box or (0, 0, self.width, self.height)
        out = bytearray(b'\x1bP0;1;0q"1;1;%d;%d' % (right - left, bottom - top))
        out += self._palette
        for y in range(top, bottom, 6):
            out += self._band(y, min(6, bottom - y), left, right)
        out += b"\x1b\\"
        return out.decode("ascii")


def encode(image: PILImage.Image, colors: int = MAX_REGISTERS, background: tuple[int, int, int] = (0, 0, 0)) -> str:
    """Sixel data (DCS ... ST) for ``image`` at its own pixel size."""
    return BandEncoder(image, colors, background).encode()
