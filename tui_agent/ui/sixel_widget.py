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
