"""A Sixel picture is placed where the lines it is drawn for are (issue 37 item 2): Textual may ask a
widget for some of its lines only (a crop); the picture for those lines starts at the crop's first
line and column on the screen, not at the top of the widget's visible part (it was drawn too high,
over what is above), and the cells under it are written (no-break spaces: see sixel_widget)."""

from __future__ import annotations

import re

from PIL import Image
from textual.app import App, ComposeResult
from textual.geometry import Region

from tui_agent.ui.images import load_textual_image
from tui_agent.ui.sixel_widget import sixel_image_class

CUP = re.compile(r"\x1b\[(\d+);(\d+)H")


async def test_a_crop_of_some_lines_is_drawn_at_those_lines(tmp_path):
    load_textual_image()
    picture = tmp_path / "p.png"
    Image.new("RGB", (60, 120), (200, 10, 10)).save(picture)
    widget_class = sixel_image_class(256, False, lambda: (10, 20))

    class Shows(App[None]):
        CSS = "Screen { layout: vertical; } #above { height: 3; }"

        def compose(self) -> ComposeResult:
            from textual.widgets import Static

            yield Static("above", id="above")
            widget = widget_class(str(picture))
            widget.styles.width, widget.styles.height = 6, 6
            widget.styles.margin = (0, 0, 0, 2)
            yield widget

    app = Shows()
    async with app.run_test(size=(20, 12)) as pilot:
        await pilot.pause()
        (cells,) = app.query_one(widget_class).children
        region = app.screen.find_widget(cells).region
        assert (region.x, region.y) == (2, 3)
        lines = cells.render_lines(Region(1, 2, 4, 3))  # columns 1-4 of lines 2-4 of the widget
        assert len(lines) == 3
        assert all(segment.text.strip("\u00a0") == "" for segment in lines[0])  # cells under it written
        assert lines[0].cell_length == 4 and "\u00a0" in lines[0].text
        text = "".join(segment.text for segment in lines[-1])
        row, column = (int(n) for n in CUP.findall(text)[0])
        assert (column - 1, row - 1) == (region.x + 1, region.y + 2)  # the crop's first cell on the screen
        assert '"1;1;40;60' in text  # that part of the picture: 4 columns of 10 px, 3 rows of 20 px
