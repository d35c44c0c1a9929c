"""textual-image's Sixel widget with our encoder (``tui_agent.ui.sixel``) and tmux passthrough.

textual-image injects the Sixel string into the widget's last line, with cursor moves around it;
that part is kept with two fixes:

- after the image it moved the cursor to the row *below* the widget, so the rest of that line
  (whatever Textual draws right of the image) landed one row too low: the "last row one column
  off" remnant seen in xterm after the command palette closed. We return to the widget's last row.
- the image's pixel height is cut down to whole six-pixel Sixel bands, so the last band never
  spills into the next text row (on the screen's last row that made xterm scroll the screen).
"""

from __future__ import annotations

from typing import Any


def sixel_image_class(colors: int, tmux: bool) -> type:
    from rich.control import Control
    from rich.segment import ControlType, Segment
    from rich.style import Style
    from textual.app import ComposeResult
    from textual_image.widget import SixelImage
    from textual_image.widget.sixel import _ImageSixelImpl, _NoopRenderable

    from tui_agent.ui import sixel
    from tui_agent.ui.terminal_probe import tmux_wrap

    plain = Style()

    class _Impl(_ImageSixelImpl):
        def _image_to_sixels(self, image: Any, sixel_options: Any = None, background: Any = None) -> str:
            rgb = tuple(background[:3]) if background else (0, 0, 0)
            whole_bands = image.height - image.height % 6
            if whole_bands and whole_bands != image.height:
                image = image.crop((0, 0, image.width, whole_bands))
            data = sixel.encode(image, colors, rgb)
            return tmux_wrap(data) if tmux else data

        def _get_sixel_segments(self, sixel_data: str) -> list[Segment]:
            region = self.screen.find_widget(self).visible_region
            return [
                Segment(Control.move_to(region.x, region.y).segment.text, style=plain),
                Segment(sixel_data, style=plain, control=((ControlType.CURSOR_FORWARD, 0),)),
                Segment(Control.move_to(region.right, region.bottom - 1).segment.text, style=plain),
            ]

    class OurSixelImage(SixelImage, Renderable=_NoopRenderable):
        def compose(self) -> ComposeResult:
            yield _Impl(self.image, self._sixel_options)

    return OurSixelImage


def served_sixel_class(colors: int) -> type:
    """The same widget for the page of ``tui-agent serve`` (xterm.js and its image addon).

    The addon maps one Sixel pixel to one CSS pixel and truncates an image to its raster size, so:
    a picture that fits its cells is sent at its own pixels (never resampled: fine detail stays
    sharp), a larger one is scaled down to fit; nothing is padded (the crop stays inside the
    picture) and no band is cut off. The cells are the widget's, so Textual's next drawing of
    them (scrolling, another picture, a resize) replaces the picture, as text replaces text.
    The picture is decoded, scaled and quantized once per size, and the visible part encoded
    from cached bands (``sixel.BandEncoder``): scrolling re-sends it without encoding it again.
    """
    from rich.control import Control
    from rich.segment import ControlType, Segment
    from rich.style import Style
    from textual.app import ComposeResult
    from textual.dom import NoScreen
    from textual.geometry import Region
    from textual.strip import Strip
    from textual_image._terminal import get_cell_size
    from textual_image.widget import SixelImage
    from textual_image.widget.sixel import _ImageSixelImpl, _NoopRenderable

    from tui_agent.ui import sixel

    plain = Style()

    class _ServedImpl(_ImageSixelImpl):
        _encoder: sixel.BandEncoder | None = None
        _encoder_key: object = None

        def _encoder_for(self, cell: Any, background: tuple[int, int, int]) -> sixel.BandEncoder:
            key = (self.image, self.content_size, cell, background)
            if self._encoder is None or self._encoder_key != key:
                from PIL import Image as PILImage

                with PILImage.open(self.image) as opened:  # type: ignore[arg-type]
                    picture = opened.copy()
                box_w, box_h = self.content_size.width * cell.width, self.content_size.height * cell.height
                if picture.width > box_w or picture.height > box_h:
                    scale = min(box_w / picture.width, box_h / picture.height)
                    size = (max(1, int(picture.width * scale)), max(1, int(picture.height * scale)))
                    picture = picture.resize(size, PILImage.Resampling.LANCZOS)
                self._encoder, self._encoder_key = sixel.BandEncoder(picture, colors, background), key
            return self._encoder

        def render_lines(self, crop: Region) -> list[Strip]:
            try:
                if not self.image or not self.screen.is_active or not crop.height or not crop.width:
                    return []
            except NoScreen:
                return []
            cell = get_cell_size()
            rgba = self._get_background_rgba()
            encoder = self._encoder_for(cell, (rgba[0], rgba[1], rgba[2]))
            left = min(encoder.width, crop.x * cell.width)
            top = min(encoder.height, crop.y * cell.height)
            right = min(encoder.width, crop.right * cell.width)
            bottom = min(encoder.height, crop.bottom * cell.height)
            data = encoder.encode((left, top, right, bottom)) if right > left and bottom > top else ""
            # Every cell is written (blanks in the background colour): what the picture does not
            # cover (it is smaller than its cells by up to a cell) shows no older text or picture.
            blank = Strip([Segment(" " * crop.width, self.rich_style)], crop.width)
            if not data:
                return [blank] * crop.height
            region = self.screen.find_widget(self).visible_region
            picture = [
                Segment(Control.move_to(region.x, region.y).segment.text, style=plain),
                Segment(data, style=plain, control=((ControlType.CURSOR_FORWARD, 0),)),
                Segment(Control.move_to(region.right, region.bottom - 1).segment.text, style=plain),
            ]
            return [blank] * (crop.height - 1) + [Strip([*blank, *picture], crop.width)]

    class ServedSixelImage(SixelImage, Renderable=_NoopRenderable):
        def compose(self) -> ComposeResult:
            yield _ServedImpl(self.image, self._sixel_options)

    return ServedSixelImage
