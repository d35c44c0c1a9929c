"""Which widget class renders images, chosen once before the app starts, and how big they are.

``prepare()`` runs before ``App.run()`` (it asks the terminal; see ``terminal_probe``) and logs
``image protocol: ...``; textual-image is imported later (``load_textual_image``), off the first
paint, without letting it probe the terminal itself (its own probe sends the kitty query raw
inside tmux and waits only 0.1 s). ``image_class()`` maps the choice to a widget class: our Sixel
encoder for Sixel terminals (``sixel_widget``), textual-image's kitty placeholders for kitty >=
0.28, half-cells elsewhere; under ``tui-agent serve`` the same Sixel encoder for the page's image
addon, pictures at their own pixels (``web-sixel``).

textual-image is used through its public API only (its widget classes; no ``textual_image._*``
name anywhere in ``tui_agent``). Two behaviours of its import are relied on, both public and
both proven by tests/images/test_textual_image_contract.py (run it first when upgrading textual-image):

- it probes the terminal at import only when ``sys.__stdout__.isatty()``: while it is imported,
  ``sys.__stdout__`` is a stand-in that says it is not a terminal, so nothing is written to the
  terminal and nothing read from the keyboard (the app's own probe has already run);
- without a terminal to ask, its cell size comes from ``TEXTUAL_CELL_WIDTH`` /
  ``TEXTUAL_CELL_HEIGHT`` (textual-image >= 0.9, the variables textual-serve sets): they hold our
  probe's cell size during the import only. textual-image keeps that size; our Sixel widget reads
  ``cell_size()`` at every drawing, so only kitty placeholder pictures keep the size of the start
  (kitty scales them to their cells; a font change only changes their sharpness).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from tui_agent.ui.terminal_probe import IMAGE_ENV, Probe, served_in_browser

log = logging.getLogger("tui_agent.ui.images")

_probe: Probe | None = None
_classes: dict[str, type] = {}
_textual_image_lock = threading.Lock()
_textual_image_loaded = False


class _NotATty:
    """Stands in for ``sys.__stdout__`` while textual-image is imported, so it does not probe."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _import_textual_image(cell: tuple[int, int]) -> None:
    cell_env = {"TEXTUAL_CELL_WIDTH": str(cell[0]), "TEXTUAL_CELL_HEIGHT": str(cell[1])}
    saved = {name: os.environ.get(name) for name in cell_env}
    os.environ.update(cell_env)
    real = sys.__stdout__
    sys.__stdout__ = _NotATty(real)  # type: ignore[misc,assignment]
    try:
        import textual_image.widget  # noqa: F401
    finally:
        sys.__stdout__ = real  # type: ignore[misc]
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_textual_image() -> None:
    """Import textual-image once, from whichever thread needs it first (the warm-up thread after
    the first paint, or the first image shown): it costs ~0.2 s, which the first paint never pays."""
    global _textual_image_loaded
    with _textual_image_lock:  # the stdout swap must not interleave between two threads
        if not _textual_image_loaded:
            _import_textual_image(current().cell)
            _textual_image_loaded = True


def prepare(first_run: bool = False) -> Probe:
    """Probe once (before the app reads the keyboard) and log the choice."""
    global _probe
    if _probe is None:
        from tui_agent.ui.terminal_probe import probe

        _probe = probe(first_run)
    return _probe


def log_choice() -> None:
    log.info(current().describe())


def current() -> Probe:
    """The probe's result; without a probe (tests, pilot) only ``TUI_AGENT_IMAGES`` decides."""
    global _probe
    if _probe is None:
        choice = (os.environ.get(IMAGE_ENV) or "unicode").lower()
        if served_in_browser():
            from tui_agent.ui.terminal_probe import served_probe

            _probe = served_probe((os.environ.get(IMAGE_ENV) or "auto").lower())
            return _probe
        _probe = Probe(choice if choice != "auto" else "unicode", "no terminal probe")
    return _probe


def image_class(choice: str | None = None) -> type:
    """The widget class for ``choice`` (auto, halfcell, sixel, kitty, unicode) or the probe's choice."""
    probe = current()
    name = (choice or "auto").lower()
    if name == "auto":
        name = probe.protocol
    if name not in _classes:
        _classes[name] = _load(name, probe)
    return _classes[name]


def _load(name: str, probe: Probe) -> type:
    load_textual_image()
    from textual_image.widget import HalfcellImage, TGPImage, UnicodeImage

    if name == "sixel":
        from tui_agent.ui.sixel_widget import sixel_image_class

        return sixel_image_class(probe.colors, probe.tmux, cell_size)
    if name == "web-sixel":
        from tui_agent.ui.sixel_widget import served_sixel_class

        return served_sixel_class(probe.colors, cell_size)
    if name == "kitty":
        return TGPImage
    if name == "kitty-direct":
        from tui_agent.ui.kitty_widget import KittyImage

        return KittyImage
    if name == "unicode":
        return UnicodeImage
    return HalfcellImage


def drawn_in_text(widget_class: type) -> bool:
    """Half-cell and Unicode pictures are characters like any text: nothing to draw over again."""
    return widget_class.__name__ in ("HalfcellImage", "UnicodeImage")


def cell_size() -> tuple[int, int]:
    return current().cell


def refresh_cell() -> tuple[int, int] | None:
    """Ask the terminal's cell size again (after a resize: a tmux client attached, the font
    changed); returns the new size if it changed. Only where a terminal was probed."""
    if _probe is None or _probe.reason in ("no terminal probe", "not a terminal") or _probe.reason.startswith("served"):
        return None
    from tui_agent.ui.terminal_probe import cell_now

    cell = cell_now()
    if cell is None or cell == _probe.cell:
        return None
    _probe.cell = cell  # the Sixel widget reads it at its next drawing
    return cell


def fit(
    image_size: tuple[int, int], max_cols: int, max_rows: int, cell: tuple[int, int] | None = None
) -> tuple[int, int]:
    """Columns and rows that show an image of ``image_size`` pixels whole, keeping its aspect ratio.

    In the served page (``web-sixel``) a picture is never enlarged past its own pixels: it is drawn
    pixel for pixel, so it gets the cells it covers and no more.
    """
    cell_w, cell_h = cell or cell_size()
    width, height = max(1, image_size[0]), max(1, image_size[1])
    if cell is None and current().protocol == "web-sixel":
        native = -(-width // cell_w), -(-height // cell_h)
        if native[0] <= max_cols and native[1] <= max_rows:
            return native
    cols = max(1, max_cols)
    rows = round(cols * cell_w * height / (width * cell_h))
    if rows > max_rows:
        rows = max(1, max_rows)
        cols = max(1, min(max_cols, round(rows * cell_h * width / (height * cell_w))))
    return cols, max(1, rows)
