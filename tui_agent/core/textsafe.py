"""Control characters made visible, so that text we did not write never drives the terminal.

A model reply, a tool result, a server's error text, a file name or a conversation title may hold
escape sequences (``ESC]0;title BEL`` sets the window title, ``ESC]52;c;…`` writes the clipboard,
``ESC[2J`` clears the screen, DCS/APC carry Sixel and Kitty graphics). ``visible`` maps every C0
and C1 control character except newline and tab to a printable stand-in (ESC becomes ``␛``), so the
text reads the same and does nothing.
"""

from __future__ import annotations

import re

# C0 controls 0x00-0x1F map to the Unicode "Control Pictures" block U+2400-U+241F (ESC -> U+241B ␛).
_TABLE: dict[int, str] = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_TABLE[0x7F] = "\u2421"  # DEL -> ␡
# C1 controls 0x80-0x9F (CSI is 0x9B, OSC 0x9D, DCS 0x90, APC 0x9F): a terminal in 8-bit mode acts on
# them too. They have no pictures; show them as <9B> and so on.
_TABLE.update({code: f"<{code:02X}>" for code in range(0x80, 0xA0)})
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with every control character except ``\\n`` and ``\\t`` shown as a printable stand-in."""
    if not _UNSAFE.search(text):
        return text
    return text.translate(_TABLE)


def has_controls(text: str) -> bool:
    return _UNSAFE.search(text) is not None
