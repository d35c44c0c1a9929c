"""The last line of defence: no control character of a widget's text reaches the terminal.

Every path that shows untrusted text makes it visible first (``core/textsafe.py``: ``␛``,
``<U+202E>``). This guard is the one boundary behind them all: every line the app draws becomes
terminal output in ``Strip.render``, and there a text segment's C0/C1 controls and bidi
overrides are removed (they take no cell, so the line's layout stays as measured). Only
segments marked as control (images' Sixel/Kitty data) and the cursor placements around them keep
their escapes. A widget that draws its text raw (an editor holding an imported message, say)
shows it without those characters instead of sending them to the terminal.

The check is one joined scan per strip rendered (strips cache their rendering).
"""

from __future__ import annotations

import logging
import re
from typing import Any

log = logging.getLogger("tui_agent.ui")
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MOVE = re.compile(r"\x1b\[\d+;\d+H\Z")  # Control.move_to, placed around an image's control segment
_installed = False


def clean(text: str, control: Any) -> str:
    """A segment's text as it may reach the terminal."""
    if control or _MOVE.match(text):
        return text
    return _UNSAFE.sub("", text)


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    from rich.color import ColorSystem
    from rich.console import COLOR_SYSTEMS
    from textual.strip import Strip

    original = Strip.render

    def render(self: Strip, console: Any) -> str:
        if self._render_cache is None and _UNSAFE.search("".join([s.text for s in self._segments])):
            color_system = COLOR_SYSTEMS.get(console.color_system or "", ColorSystem.TRUECOLOR)
            render_style = self.render_style
            self._render_cache = "".join(
                [
                    clean(text, control)
                    if style is None
                    else render_style(style, clean(text, control), color_system=color_system)
                    for text, style, control in self._segments
                ]
            )
        return original(self, console)

    Strip.render = render  # type: ignore[method-assign]
    log.debug("text guard: control characters are removed from drawn text")
