"""The full-size image screen: the conversation's images one at a time, as big as the terminal allows.

Left/right move through them, Esc goes back; ``e`` opens the image in the desktop's viewer and
``s`` saves a copy, each reporting what really happened.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.carousel import image_pixels
from tui_agent.ui.widgets.host import host_of
from tui_agent.ui.widgets.key_footer import KeyFooter


class ImageViewerScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="viewer.back"),
        Binding("left", "previous", "Previous", id="viewer.previous"),
        Binding("right", "next", "Next", id="viewer.next"),
        Binding("e", "external", "Open in external viewer", id="viewer.external"),
        Binding("s", "save", "Save a copy", id="viewer.save"),
    ]
    DEFAULT_CSS = """
    ImageViewerScreen { layout: vertical; }
    ImageViewerScreen #viewer-title { height: 1; width: 1fr; content-align: center middle; color: $text-muted; }
    ImageViewerScreen #viewer-slot { height: 1fr; width: 1fr; align: center middle; }
    ImageViewerScreen .viewer-missing { width: auto; height: auto; color: $error; }
    """

    def __init__(self, paths: list[Path], index: int = 0) -> None:
        super().__init__()
        self.paths = paths
        self.index = index
        self._shown: tuple[int, tuple[int, int]] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="viewer-title", markup=False)
        yield Center(id="viewer-slot")
        yield KeyFooter()

    @property
    def current(self) -> Path:
        return self.paths[self.index]

    async def on_mount(self) -> None:
        await self._show()

    async def on_resize(self) -> None:
        self.call_after_refresh(self.call_later, self._show)  # on this screen's queue, not among its callbacks

    def _title(self) -> str:
        counter = f"{self.index + 1} / {len(self.paths)} · " if len(self.paths) > 1 else ""
        return f"{counter}{self.current.name}   (←/→ images · e external viewer · s save a copy · Esc back)"

    def _widget(self, room: tuple[int, int]) -> Widget:
        from tui_agent.core.media_files import MediaUnavailable, local_file
        from tui_agent.ui.images import fit

        vault = host_of(self.app).vault
        try:
            local_file(vault.root if vault is not None else None, self.current)  # PostgreSQL: fetched if needed
        except MediaUnavailable as exc:
            problem = "" if exc.missing else f"\n{exc}"
            shown = visible(f"image unavailable: {self.current.name}{problem}")
            return Static(shown, classes="viewer-missing", markup=False)
        pixels = image_pixels(self.current)
        if pixels is None:
            return Static(visible(f"image unavailable: {self.current.name}"), classes="viewer-missing", markup=False)
        cols, rows = fit(pixels, *room)
        widget: Widget = host_of(self.app).image_class(str(self.current), classes="viewer-image")
        widget.styles.width = cols
        widget.styles.height = rows
        return widget

    async def _show(self) -> None:
        slot = self.query_one("#viewer-slot", Center)
        room = (max(4, self.size.width - 2), max(2, self.size.height - 2))
        if self._shown == (self.index, room):
            return
        self._shown = (self.index, room)
        self.query_one("#viewer-title", Static).update(self._title())
        await slot.remove_children()
        await slot.mount(self._widget(room))

    async def action_previous(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index - 1) % len(self.paths)
            await self._show()

    async def action_next(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index + 1) % len(self.paths)
            await self._show()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_external(self) -> None:
        from tui_agent.ui.image_open import open_external

        open_external(self.app, self.current)

    def action_save(self) -> None:
        from tui_agent.ui.image_open import save_copy

        save_copy(self.app, self.current)
