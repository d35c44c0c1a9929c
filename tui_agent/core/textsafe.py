"""Control characters made visible, so that text we did not write never drives the terminal.

A model reply, a tool result, a server's error text, a file name or a conversation title may hold
escape sequences (``ESC]0;title BEL`` sets the window title, ``ESC]52;c;…`` writes the clipboard,
``ESC[2J`` clears the screen, DCS/APC carry Sixel and Kitty graphics). ``visible`` maps every C0
and C1 control character except newline and tab to a printable stand-in (ESC becomes ``␛``), and
the bidi overrides to ``<U+202E>`` and so on, so the text reads the same and does nothing.
``clipboard_text`` is what a copy puts on the clipboard: no control characters but tab and newline.
"""

from __future__ import annotations

import re

# C0 controls 0x00-0x1F map to the Unicode "Control Pictures" block U+2400-U+241F (ESC -> U+241B ␛).
_TABLE: dict[int, str] = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_TABLE[0x7F] = "\u2421"  # DEL -> ␡
# C1 controls 0x80-0x9F (CSI is 0x9B, OSC 0x9D, DCS 0x90, APC 0x9F): a terminal in 8-bit mode acts on
# them too. They have no pictures; show them as <9B> and so on.
_TABLE.update({code: f"<{code:02X}>" for code in range(0x80, 0xA0)})
# Bidi embeddings, overrides and isolates reorder what is drawn after them (U+202E shows "txt.exe"
# as "exe.txt"): shown as <U+202E> and so on.
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TABLE.update({code: f"<U+{code:04X}>" for code in _BIDI})
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Also invisible: zero-width characters, direction marks, soft hyphen, word joiner, BOM, tag
# characters. ``revealed`` shows these too, where every character must be seen (an approval).
_INVISIBLE = [0x00AD, 0x061C, 0x115F, 0x1160, 0x180E, *range(0x200B, 0x2010), *range(0x2060, 0x2065), 0xFEFF]
_REVEAL_TABLE = {**_TABLE, **{code: f"<U+{code:04X}>" for code in _INVISIBLE}}
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


def visible(text: str) -> str:
    """``text`` with every control character except ``\\n`` and ``\\t`` shown as a printable stand-in."""
    if not _UNSAFE.search(text):
        return text
    return text.translate(_TABLE)


def has_controls(text: str) -> bool:
    return _UNSAFE.search(text) is not None


def revealed(text: str) -> str:
    """``visible`` and every invisible character too (zero-width, direction marks, tags), as <U+XXXX>."""
    if not _HIDDEN.search(text):
        return text
    return _HIDDEN.sub(lambda m: _REVEAL_TABLE.get(ord(m.group()), f"<U+{ord(m.group()):04X}>"), text)


def clipboard_text(text: str) -> str:
    """Text fit to be pasted: control characters other than tab and newline removed (so no escape
    sequence, and no bracketed-paste end ``ESC[201~`` that would let the rest run as typed), CR LF
    as LF."""
    text = text.replace("\r\n", "\n")
    if not _CLIP_UNSAFE.search(text):
        return text
    return _CLIP_UNSAFE.sub("", text)


_CLIP_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
