"""The served page's Sixel: any rectangle of a picture from bands encoded once (what scrolling asks for)."""

from __future__ import annotations

from PIL import Image
from sixel_decode import decode

from tui_agent.ui import sixel


def test_every_crop_decodes_to_that_part_of_the_picture_and_reuses_the_bands():
    picture = Image.effect_mandelbrot((90, 77), (-2, -1.5, 1, 1.5), 60).convert("RGB")
    encoder = sixel.BandEncoder(picture, 64)
    assert encoder.encode() == sixel.encode(picture, 64)  # the terminal's encoding is the same
    whole = decode(encoder.encode()).image.convert("RGB")
    assert whole.size == picture.size
    for box in [(0, 19, 90, 77), (0, 38, 90, 77), (0, 0, 90, 57), (10, 5, 70, 43), (0, 76, 90, 77)]:
        decoded = decode(encoder.encode(box))
        assert not decoded.defined_after_pixels
        assert decoded.image.convert("RGB").tobytes() == whole.crop(box).tobytes(), box
    # Scrolling by whole cells of 19 pixels: after the first few crops, no band is encoded again.
    for step in range(4):
        encoder.encode((0, 19 * step, 90, 77))
    cached = len(encoder._bands)
    for step in range(4):
        encoder.encode((0, 19 * step, 90, 77))
    assert len(encoder._bands) == cached
