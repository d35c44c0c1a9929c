"""Sixel pictures with our encoder (``tui_agent.ui.sixel``), through textual-image's public API only.

Why our encoder: it dithers (Floyd-Steinberg) where textual-image (0.12 and 0.13) quantizes
without dithering. Side by side in xterm (``bench/sixel_compare.py``, bench/RESULTS.md), against
textual-image 0.13.2, blurred as the eye sees it: a smooth gradient is 2.6-5.7x closer to its
source with ours, a photo 15-43% closer (3-8% further pixel by pixel); flat colours the same.

How it plugs in: textual-image has no public way to give its Sixel widget another encoder (its
hook, ``_ImageSixelImpl._image_to_sixels``, is on a private class), and a Sixel *renderable*
cannot draw inside Textual (Textual needs printable segments; textual-image's own widget does not
use its renderable either). So the widget is textual-image's public ``SixelImage`` (its ``image``
property, sizing and recompose on a new image are theirs) declared the way textual-image declares
its own widgets, ``Renderable=`` a renderable of ours (it draws nothing), and its ``compose()``
(Textual's public method) yields our own child widget, which writes the Sixel string into its last
line with cursor moves around it, as textual-image's does. No private name of textual-image is
used; tests/images/test_textual_image_contract.py proves the public behaviour relied on.

The child widget's drawing, compared with textual-image's:

- after the picture the cursor returns to the widget's last row (textual-image moved it to the row
  below, so the rest of that line landed one row too low: a remnant seen in xterm);
- the picture's pixel height is cut to whole six-pixel Sixel bands, so the last band never spills
  into the next text row (on the screen's last row that made xterm scroll the screen);
- the picture is scaled and quantized once per size and the visible part encoded from cached
  bands (``sixel.BandEncoder``): scrolling re-sends it without quantizing it again;
- inside tmux the Sixel string is wrapped for passthrough (``terminal_probe.tmux_wrap``);
- the cell size is the app's (``images.cell_size``, passed in): it follows a tmux client that
  attaches, where textual-image keeps the one it read at import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CellSize = Callable[[], tuple[int, int]]


class NoDrawing:
    """textual-image's renderable protocol (``__init__(image, width, height)``, ``__rich_console__``,
    ``__rich_measure__``, ``cleanup``), drawing nothing: the child widget draws the picture."""

    def __init__(self, image: Any, width: Any = None, height: Any = None) -> None:
        pass

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        yield Segment("")

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement(0, 0)

    def cleanup(self) -> None:
        pass


def _cells_widget(colors: int, cell_size: CellSize, tmux: bool, served: bool) -> type:
    from rich.control import Control
    from rich.segment import ControlType, Segment
    from rich.style import Style
    from textual.dom import NoScreen
    from textual.geometry import Region
    from textual.strip import Strip
    from textual.widget import Widget

    from tui_agent.ui import sixel
    from tui_agent.ui.terminal_probe import tmux_wrap

    plain = Style()

    class SixelCells(Widget, can_focus=False, inherit_css=False):
        DEFAULT_CSS = "SixelCells { width: 100%; height: 100%; }"

        def __init__(self, source: Any) -> None:
            super().__init__()
            self.source = source
            self._encoder: sixel.BandEncoder | None = None
            self._encoder_key: object = None

        def _picture(self, cell: tuple[int, int]) -> Any:
            from PIL import Image as PILImage

            if isinstance(self.source, PILImage.Image):
                picture = self.source.copy()
            else:
                with PILImage.open(self.source) as opened:
                    picture = opened.copy()
            box_w, box_h = self.size.width * cell[0], self.size.height * cell[1]
            if not served:
                return picture.resize((box_w, box_h))  # stretched to the cells, as textual-image does
            # The page's image addon draws one Sixel pixel per CSS pixel: a picture that fits is
            # sent at its own pixels (never resampled: fine detail stays sharp), a larger one is
            # scaled down to fit; nothing is padded.
            if picture.width > box_w or picture.height > box_h:
                scale = min(box_w / picture.width, box_h / picture.height)
                size = (max(1, int(picture.width * scale)), max(1, int(picture.height * scale)))
                picture = picture.resize(size, PILImage.Resampling.LANCZOS)
            return picture

        def _encoder_for(self, cell: tuple[int, int], background: tuple[int, int, int]) -> sixel.BandEncoder:
            key = (self.source, self.size, cell, background)
            if self._encoder is None or self._encoder_key != key:
                self._encoder = sixel.BandEncoder(self._picture(cell), colors, background)
                self._encoder_key = key
            return self._encoder

        def render_lines(self, crop: Region) -> list[Strip]:
            try:
                if not self.source or not self.screen.is_active or not crop.height or not crop.width:
                    return []
            except NoScreen:
                return []
            cell = cell_size()
            _, colour = self.background_colors
            encoder = self._encoder_for(cell, (colour.r, colour.g, colour.b))
            left = min(encoder.width, crop.x * cell[0])
            top = min(encoder.height, crop.y * cell[1])
            right = min(encoder.width, crop.right * cell[0])
            bottom = min(encoder.height, crop.bottom * cell[1])
            if not served and bottom - top >= 6:
                bottom -= (bottom - top) % 6  # whole bands: the last never spills into the next row
            data = encoder.encode((left, top, right, bottom)) if right > left and bottom > top else ""
            # Every cell is written. In the page, blanks in the background colour: what the picture
            # does not cover (it is smaller than its cells by up to a cell) shows no older text or
            # picture. In a terminal, no-break spaces: a cell the picture covered differs from a
            # blank, so when the picture moves or leaves, whatever draws there next is a change that
            # is written (tmux writes a cell to the terminal only when it changed, and so does
            # Textual), and writing a cell erases the picture's pixels in it.
            filler = " " if served else "\u00a0"
            blank = Strip([Segment(filler * crop.width, self.rich_style)], crop.width)
            lines, last = [blank] * (crop.height - 1), [*blank]
            if not data:
                return [*lines, Strip(last, crop.width)]
            if tmux:
                data = tmux_wrap(data)
            # Where this crop is on the screen: the widget's own region (not its visible part, which
            # is where a crop of fewer lines is not), the crop's offset inside it.
            region = self.screen.find_widget(self).region
            x, y = region.x + crop.x, region.y + crop.y
            picture = [
                Segment(Control.move_to(x, y).segment.text, style=plain),
                Segment(data, style=plain, control=((ControlType.CURSOR_FORWARD, 0),)),
                Segment(Control.move_to(x + crop.width, y + crop.height - 1).segment.text, style=plain),
            ]
            return [*lines, Strip([*last, *picture], crop.width)]

    return SixelCells


def _image_class(name: str, cells: type) -> type:
    from textual.app import ComposeResult
    from textual_image.widget import SixelImage

    def compose(self: SixelImage) -> ComposeResult:
        yield cells(self.image)

    # As textual-image declares its own widgets (``class TGPImage(BaseImage, Renderable=...)``),
    # under its own name from the start (Textual takes the CSS type name from the class's name).
    return type(name, (SixelImage,), {"compose": compose, "__module__": __name__}, Renderable=NoDrawing)


def sixel_image_class(colors: int, tmux: bool, cell_size: CellSize) -> type:
    """The widget for a Sixel terminal with ``colors`` registers (wrapped for tmux's passthrough)."""
    return _image_class("OurSixelImage", _cells_widget(colors, cell_size, tmux, served=False))


def served_sixel_class(colors: int, cell_size: CellSize) -> type:
    """The same widget for the page of ``tui-agent serve`` (xterm.js and its image addon).

    The addon maps one Sixel pixel to one CSS pixel and truncates an image to its raster size, so:
    a picture that fits its cells is sent at its own pixels, a larger one is scaled down to fit;
    nothing is padded and no band is cut off. The cells are the widget's, so Textual's next
    drawing of them (scrolling, another picture, a resize) replaces the picture, as text replaces
    text.
    """
    return _image_class("ServedSixelImage", _cells_widget(colors, cell_size, False, served=True))
