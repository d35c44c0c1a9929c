"""Very long replies as plain text: only the rows on screen are rendered, so a 100,000-line reply
costs no more to show, scroll or append to than a short one."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

# Control characters are shown as their Unicode pictures (U+2400...), never sent to the terminal.
_VISIBLE = {c: 0x2400 + c for c in range(0x20)} | {0x7F: 0x2421} | {c: 0xFFFD for c in range(0x80, 0xA0)}
_VISIBLE[0x09] = 0x20


def visible(line: str) -> str:
    return line.translate(_VISIBLE)


class LongText(ScrollView, can_focus=True):
    """A read-only plain-text view with its own scroll bars (height set in CSS)."""

    DEFAULT_CSS = """
    LongText { height: 20; }
    """

    def __init__(self, text: str = "", *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.lines: list[str] = [""]
        self._width = 0
        self.append(text)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def append(self, text: str) -> None:
        if not text:
            return
        parts = text.split("\n")
        self.lines[-1] = self.lines[-1] + visible(parts[0])
        self.lines.extend(visible(part) for part in parts[1:])
        self._width = max(self._width, max(cell_len(line) for line in self.lines[-len(parts) :]))
        self.virtual_size = Size(self._width, len(self.lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        if index >= len(self.lines):
            return Strip.blank(self.size.width, self.rich_style)
        width = self.size.width
        strip = Strip([Segment(self.lines[index], self.rich_style)])
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
