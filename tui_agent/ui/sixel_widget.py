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
    """
    from rich.control import Control
    from rich.segment import ControlType, Segment
    from rich.style import Style
    from textual.app import ComposeResult
    from textual.geometry import Region
    from textual.strip import Strip
    from textual_image._pixeldata import PixelData
    from textual_image.widget import SixelImage
    from textual_image.widget.sixel import _ImageSixelImpl, _NoopRenderable

    from tui_agent.ui import sixel

    plain = Style()

    class _ServedImpl(_ImageSixelImpl):
        def render_lines(self, crop: Region) -> list[Strip]:
            # Every cell is written (blanks in the background colour): what the picture does not
            # cover (it is smaller than its cells by up to a cell) shows no older text or picture.
            lines: list[Strip] = super().render_lines(crop)
            if not lines:
                return lines
            style = self.rich_style
            blank = Strip([Segment(" " * crop.width, style)], crop.width)
            return [blank] * (len(lines) - 1) + [Strip([*blank, *lines[-1]], crop.width)]

        def _scale_image(self, image_data: Any, terminal_sizes: Any) -> Any:
            box_w = self.content_size.width * terminal_sizes.width
            box_h = self.content_size.height * terminal_sizes.height
            if image_data.width <= box_w and image_data.height <= box_h:
                return image_data
            scale = min(box_w / image_data.width, box_h / image_data.height)
            size = (max(1, int(image_data.width * scale)), max(1, int(image_data.height * scale)))
            from PIL import Image as PILImage

            return PixelData(image_data.pil_image.resize(size, PILImage.Resampling.LANCZOS))

        def _crop_image(self, image: Any, crop: Any, terminal_sizes: Any) -> Any:
            left = min(image.width, crop.x * terminal_sizes.width)
            top = min(image.height, crop.y * terminal_sizes.height)
            right = min(image.width, crop.right * terminal_sizes.width)
            bottom = min(image.height, crop.bottom * terminal_sizes.height)
            return image.cropped(left, top, right, bottom)

        def _image_to_sixels(self, image: Any, sixel_options: Any = None, background: Any = None) -> str:
            if not image.width or not image.height:
                return ""
            rgb = tuple(background[:3]) if background else (0, 0, 0)
            return sixel.encode(image, colors, rgb)

        def _get_sixel_segments(self, sixel_data: str) -> list[Segment]:
            region = self.screen.find_widget(self).visible_region
            return [
                Segment(Control.move_to(region.x, region.y).segment.text, style=plain),
                Segment(sixel_data, style=plain, control=((ControlType.CURSOR_FORWARD, 0),)),
                Segment(Control.move_to(region.right, region.bottom - 1).segment.text, style=plain),
            ]

    class ServedSixelImage(SixelImage, Renderable=_NoopRenderable):
        def compose(self) -> ComposeResult:
            yield _ServedImpl(self.image, self._sixel_options)

    return ServedSixelImage
