"""An image carousel: one image at a time, left/right keys and arrow buttons, a ``1 / 3`` counter.

One image shows no arrows and no counter. A broken or missing file shows a clear placeholder.
"""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Static

from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.textsafe import visible


class ImageCarousel(Vertical, can_focus=True):
    BINDINGS = [
        Binding("left", "previous", "Previous image", id="carousel.previous"),
        Binding("right", "next", "Next image", id="carousel.next"),
        Binding("o", "open", "Open full size", id="carousel.open"),
    ]
    DEFAULT_CSS = """
    ImageCarousel { height: auto; width: 44; padding: 0 1; }
    ImageCarousel:focus { background: $accent 10%; }
    ImageCarousel .carousel-image { width: 40; height: auto; }
    ImageCarousel .carousel-missing { width: 40; height: 3; color: $error; }
    ImageCarousel .carousel-nav { height: 1; width: 40; }
    ImageCarousel Button.arrow { min-width: 3; width: 3; height: 1; margin: 0; border: none; }
    ImageCarousel .counter { width: 1fr; content-align: center middle; color: $text-muted; }
    ImageCarousel:focus .counter { color: $accent; text-style: bold; }
    """

    index: reactive[int] = reactive(0)

    class OpenRequested(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(self, paths: list[Path], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths = paths

    def compose(self) -> ComposeResult:
        yield self._image_widget(0)
        if len(self.paths) > 1:
            with Horizontal(classes="carousel-nav"):
                yield Button("◀", classes="arrow", id="prev", compact=True)
                yield Static(self._counter(), classes="counter")
                yield Button("▶", classes="arrow", id="next", compact=True)

    @property
    def current(self) -> Path:
        return self.paths[self.index]

    def _counter(self) -> str:
        return f"{self.index + 1} / {len(self.paths)}"

    def _image_widget(self, index: int) -> Widget:
        path = self.paths[index]
        try:
            verify_image(path)
        except (ImageCheckError, OSError) as exc:
            return Static(visible(f"image unavailable: {path.name}\n{exc}"), classes="carousel-missing", markup=False)
        return self.app.image_class(str(path), classes="carousel-image")  # type: ignore[attr-defined]

    async def watch_index(self, index: int) -> None:
        if not self.is_mounted:
            return
        old = self.query(".carousel-image, .carousel-missing").first()
        await self.mount(self._image_widget(index), after=old)
        await old.remove()
        for counter in self.query(".counter").results(Static):
            counter.update(self._counter())

    def action_previous(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index - 1) % len(self.paths)

    def action_next(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index + 1) % len(self.paths)

    def action_open(self) -> None:
        self.post_message(self.OpenRequested(self.current))

    @on(Button.Pressed, "#prev")
    def _prev_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_previous()

    @on(Button.Pressed, "#next")
    def _next_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_next()
