"""Which textual-image widget class renders images.

textual-image probes the terminal once, when it is imported, by writing to stdout; it must be
imported before the app starts (imported late, the terminal's reply is typed into the input).
This module imports it at the top and is imported by the app module.
"""

from __future__ import annotations

import os

from textual_image.widget import HalfcellImage, Image, SixelImage, TGPImage, UnicodeImage

IMAGE_ENV = "TUI_AGENT_IMAGES"
CLASSES = {"auto": Image, "halfcell": HalfcellImage, "sixel": SixelImage, "kitty": TGPImage, "unicode": UnicodeImage}


def served_in_browser() -> bool:
    """textual-serve's terminal (xterm.js) has no Sixel or Kitty support and sets TERM_PROGRAM."""
    return os.environ.get("TERM_PROGRAM") == "textual" or os.environ.get("TUI_AGENT_SERVED") == "1"


def image_class(choice: str | None = None) -> type:
    """``choice`` or ``$TUI_AGENT_IMAGES`` (auto, halfcell, sixel, kitty, unicode); half-blocks in a browser."""
    name = (choice or os.environ.get(IMAGE_ENV) or "auto").lower()
    if name == "auto" and served_in_browser():
        name = "halfcell"
    return CLASSES.get(name, Image)
