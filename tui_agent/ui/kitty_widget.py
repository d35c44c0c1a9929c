"""Kitty graphics by direct placement, for kittys without Unicode placeholders (before 0.28).

textual-image's kitty widget places images through Unicode placeholder cells (``U=1``); kitty
0.26.5 (Debian 12's) rejects that (``invalid key character: 0x55``) and shows empty boxes.
Here the PNG file is sent once (``a=t``, chunked base64, ``q=2`` so kitty never answers into the
keyboard stream) and placed at the widget's cells with ``a=p`` from the widget's last line, the
way textual-image injects Sixel. A placement floats above the text, so it is moved on every
render (same image and placement id replaces it) and deleted whenever the widget is hidden,
scrolled away, unmounted or covered by another screen (the command palette, the image viewer).
"""

from __future__ import annotations

import base64
import itertools
from pathlib import Path

from rich.control import Control
from rich.segment import ControlType, Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

CHUNK = 4096
_ids = itertools.count(7001)
_PLAIN = Style()


def transmit(image_id: int, png: bytes) -> str:
    """``a=t`` in chunks of at most 4096 base64 bytes (kitty's limit), ``m=1`` on all but the last."""
    data = base64.standard_b64encode(png).decode("ascii")
    chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [""]
    out = []
    for n, chunk in enumerate(chunks):
        more = 1 if n < len(chunks) - 1 else 0
        keys = f"a=t,f=100,i={image_id},q=2,m={more}" if n == 0 else f"m={more},q=2"
        out.append(f"\x1b_G{keys};{chunk}\x1b\\")
    return "".join(out)


def place(image_id: int, cols: int, rows: int, source: tuple[int, int, int, int] | None = None) -> str:
    """Put the image over ``cols`` x ``rows`` cells at the cursor, cropped to ``source`` (x, y, w, h px)."""
    crop = f",x={source[0]},y={source[1]},w={source[2]},h={source[3]}" if source else ""
    return f"\x1b_Ga=p,i={image_id},p=1,c={cols},r={rows},C=1,q=2{crop}\x1b\\"


def delete(image_id: int, free: bool = False) -> str:
    return f"\x1b_Ga=d,d={'I' if free else 'i'},i={image_id},q=2\x1b\\"


def write(widget: Widget, data: str) -> None:
    """Out-of-band output (deleting a placement) straight to the terminal."""
    driver = getattr(widget.app, "_driver", None)
    if driver is not None:
        driver.write(data)
        driver.flush()


class KittyImage(Widget):
    """An image file shown by kitty direct placement; size it with ``styles.width/height``."""

    DEFAULT_CSS = "KittyImage { width: 20; height: 10; }"

    def __init__(self, image: str | Path, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.path = Path(image)
        self.image_id = next(_ids)
        self._sent = False
        self._placed = False
        self._pixels: tuple[int, int] | None = None

    def on_mount(self) -> None:
        self.app.screen_change_signal.subscribe(self, self._screen_changed)

    def _screen_changed(self, screen: object) -> None:
        if screen is not self.screen:
            self.remove_placement()
        else:
            # Back on top: place it again once the screen is active (a render before that is blank).
            self.call_after_refresh(self.refresh)
            self.set_timer(0.1, self.refresh)

    def on_hide(self) -> None:
        self.remove_placement()

    def on_unmount(self) -> None:
        if self._sent:
            write(self, delete(self.image_id, free=True))

    def remove_placement(self) -> None:
        # The data goes too: kitty may evict an image without placements, and a placement of an
        # evicted image shows nothing. It is sent again with the next placement.
        if self._placed or self._sent:
            self._placed = False
            self._sent = False
            write(self, delete(self.image_id, free=True))

    def _image_pixels(self) -> tuple[int, int]:
        if self._pixels is None:
            from PIL import Image

            with Image.open(self.path) as image:
                self._pixels = image.size
        return self._pixels

    def render_lines(self, crop: Region) -> list[Strip]:
        blank = [Strip([Segment(" " * crop.width, self.rich_style)], crop.width)] * crop.height
        # A render can still come for a widget just removed (the carousel's next picture replaces
        # it): its screen is gone, and asking for it raised NoScreen, which ended the app in kitty.
        if not crop.height or not crop.width or not self.is_attached:
            return blank
        try:
            screen = self.screen
            region = screen.find_widget(self).visible_region
        except Exception:  # not on a screen, or not on this one's map (yet): nothing to place
            return blank
        if not screen.is_active:
            return blank
        if not region.width or not region.height:
            return blank
        out = ""
        if not self._sent:
            try:
                out += transmit(self.image_id, self.path.read_bytes())
            except OSError:
                return blank
            self._sent = True
        width, height = self._image_pixels()
        size = self.content_size
        visible = self.content_region.intersection(region)
        top = visible.y - self.content_region.y
        left = visible.x - self.content_region.x
        source = (
            left * width // max(1, size.width),
            top * height // max(1, size.height),
            visible.width * width // max(1, size.width),
            visible.height * height // max(1, size.height),
        )
        whole = visible.size == size
        out += place(self.image_id, visible.width, visible.height, None if whole else source)
        self._placed = True
        segments = [
            Segment(Control.move_to(visible.x, visible.y).segment.text, style=_PLAIN),
            Segment(out, style=_PLAIN, control=((ControlType.CURSOR_FORWARD, 0),)),
            Segment(Control.move_to(visible.right, visible.bottom - 1).segment.text, style=_PLAIN),
        ]
        # The last row's cells are painted first; then the cursor goes to the image's corner, places
        # it, and comes back to where the row ended.
        last = Strip([*blank[-1], *segments], crop.width)
        return [*blank[:-1], last]
