"""Picture sizes read from the file's first bytes (no Pillow before the first paint), checked
against what Pillow itself reads from the same files."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tui_agent.core.images import header_size

SIZES = [(1, 1), (64, 48), (333, 17), (17, 333), (1024, 768)]
FORMATS = [
    ("png", {}),
    ("png", {"mode": "RGBA"}),
    ("gif", {}),
    ("jpeg", {}),
    ("jpeg", {"progressive": True}),
    ("jpeg", {"exif": True}),
    ("webp", {"lossless": False}),
    ("webp", {"lossless": True}),
    ("webp", {"mode": "RGBA", "lossless": False}),  # alpha: the extended (VP8X) header
]


def picture(fmt: str, size: tuple[int, int], options: dict) -> bytes:
    options = dict(options)
    image = Image.new(options.pop("mode", "RGB"), size, "teal")
    if options.pop("exif", False):
        exif = Image.Exif()
        exif[0x010F] = "camera maker, " * 200  # a long APP1 segment before the frame header
        options["exif"] = exif.tobytes()
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("fmt", "options"), FORMATS)
def test_the_header_gives_the_size_pillow_reads(tmp_path, fmt, options, size):
    path = tmp_path / f"picture.{fmt}"
    path.write_bytes(picture(fmt, size, options))
    with Image.open(path) as image:
        assert image.size == size
    assert header_size(path) == size


def test_an_animated_gif_gives_its_screen_size(tmp_path):
    frames = [Image.new("RGB", (40, 30), colour) for colour in ("red", "blue")]
    path = tmp_path / "moving.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100)
    assert header_size(path) == (40, 30)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a picture at all",
        b"\x89PNG\r\n\x1a\n",  # cut inside the header
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x00\x00\x00\x00\x05",  # zero width
        b"GIF89a\x01",
        b"\xff\xd8\xff\xe0\x00\x10JFIF",  # a JPEG cut before its frame header
        b"\xff\xd8garbage after the start marker",
        b"RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00",  # no key frame start code
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    ],
)
def test_anything_else_gives_no_size(tmp_path, content):
    path = tmp_path / "broken.png"
    path.write_bytes(content)
    assert header_size(path) is None


def test_a_missing_file_gives_no_size(tmp_path):
    assert header_size(tmp_path / "gone.png") is None
    assert header_size(tmp_path) is None  # a directory
