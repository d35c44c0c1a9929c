"""Our Sixel encoder, decoded pixel by pixel and compared to the source image."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from PIL import Image, ImageFilter
from sixel_decode import decode

from tui_agent.ui import sixel


def gradient(width: int = 96, height: int = 50) -> Image.Image:
    image = Image.new("RGB", (width, height))
    for y in range(height):
        for x in range(width):
            image.putpixel((x, y), (x * 255 // (width - 1), y * 255 // (height - 1), (x + y) * 255 // (width + height)))
    return image


def colours(image: Image.Image) -> set[tuple[int, int, int]]:
    return {c for _, c in image.getcolors(1 << 24) or []}


def mean_error(a: Image.Image, b: Image.Image) -> float:
    pa, pb = a.convert("RGB").tobytes(), b.convert("RGB").tobytes()
    assert len(pa) == len(pb)
    return sum(abs(x - y) for x, y in zip(pa, pb, strict=True)) / len(pa)


def test_every_pixel_decodes_to_the_source_colour_when_the_palette_fits():
    image = Image.new("RGB", (23, 13), (200, 30, 40))
    for x in range(23):
        image.putpixel((x, x % 13), (10, 220, 90))
    image.putpixel((22, 12), (0, 0, 255))
    decoded = decode(sixel.encode(image))
    assert decoded.image.size == (23, 13)
    expected = bytes(round(round(v * 100 / 255) * 255 / 100) for v in image.tobytes())
    assert decoded.image.tobytes() == expected


def test_the_whole_palette_comes_before_the_pixel_data():
    data = sixel.encode(gradient())
    decoded = decode(data)
    assert not decoded.defined_after_pixels
    assert len(decoded.palette) <= 256
    assert data.count(";2;") == len(decoded.palette)  # each register defined once


def test_a_gradient_is_close_to_the_source_and_fully_covered():
    source = gradient()
    decoded = decode(sixel.encode(source, colors=256))
    assert (255, 0, 255) not in colours(decoded.image)  # no pixel left unpainted
    assert mean_error(decoded.image, source) < 6  # per-pixel dither noise
    blur = ImageFilter.BoxBlur(2)
    assert mean_error(decoded.image.filter(blur), source.filter(blur)) < 2


def test_dithering_keeps_local_colour_where_few_registers_exist():
    """With 16 registers, Floyd-Steinberg keeps each small area's average colour; plain mapping posterises."""
    source = gradient(120, 60)
    ours = decode(sixel.encode(source, colors=16)).image
    assert len(colours(ours)) <= 16
    plain = source.quantize(colors=16, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).convert("RGB")
    blur = ImageFilter.BoxBlur(3)
    ours_error = mean_error(ours.filter(blur), source.filter(blur))
    plain_error = mean_error(plain.filter(blur), source.filter(blur))
    assert ours_error < plain_error * 0.7


def test_transparency_is_composited_on_the_background():
    image = Image.new("RGBA", (12, 12), (0, 0, 0, 0))
    for x in range(6):
        for y in range(12):
            image.putpixel((x, y), (255, 255, 255, 255))
    decoded = decode(sixel.encode(image, background=(0, 0, 128)))
    assert decoded.image.getpixel((0, 0)) == (255, 255, 255)
    assert decoded.image.getpixel((11, 11)) == (0, 0, 128)


def test_the_decoder_reads_libsixel_output_like_ours():
    """Checks the test decoder itself against libsixel's reference encoder."""
    img2sixel = shutil.which("img2sixel")
    if img2sixel is None:
        pytest.skip("needs libsixel's img2sixel: apt-get install libsixel-bin")
    source = gradient()
    png = Image.new("RGB", source.size)
    png.paste(source)
    import io

    buffer = io.BytesIO()
    png.save(buffer, "PNG")
    out = subprocess.run([img2sixel, "-p", "256"], input=buffer.getvalue(), capture_output=True, check=True).stdout
    reference = decode(out.decode("ascii")).image
    assert mean_error(reference, source) < 8
    assert mean_error(decode(sixel.encode(source)).image, source) <= mean_error(reference, source) + 1
