"""An image carousel: one image at a time, left/right keys and arrow buttons, a ``1 / 3`` counter;
``e`` puts ``/edit <the picture shown>`` in the composer (the app's ``edit_picture``).

One image shows no arrows and no counter. A broken or missing file shows a clear placeholder.

The image sits in a slot whose size the carousel computes itself (columns from the width it is
given, rows from the tallest image's aspect ratio, capped by the screen height), so switching
images, resizing and reopening never change or collapse it; textual-image's own ``height: auto``
measured a fresh widget at width 0 and gave it zero rows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Static

from tui_agent.core.images import ImageCheckError, header_size, verify_image
from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.host import host_of

MAX_COLS = 100  # wider than this, a picture is too much for a chat bubble
MAX_ROWS_SHARE = 0.45  # of the screen height


def image_pixels(path: Path) -> tuple[int, int] | None:
    """The picture's size once fully decoded; ``None`` if it cannot be shown."""
    try:
        _format, width, height = verify_image(path)
    except (ImageCheckError, OSError):
        return None
    return width, height


class ImageCarousel(Vertical, can_focus=True):
    BINDINGS = [
        Binding("left", "previous", "Previous image", id="carousel.previous"),
        Binding("right", "next", "Next image", id="carousel.next"),
        Binding("o", "open", "Open full size", id="carousel.open"),
        Binding("e", "app.edit_picture", "Edit this picture", id="carousel.edit"),
    ]
    DEFAULT_CSS = """
    ImageCarousel { height: auto; width: 1fr; max-width: 104; padding: 0 1; }
    ImageCarousel:focus { background: $accent 10%; }
    ImageCarousel .carousel-slot { width: 1fr; height: auto; align: center middle; }
    ImageCarousel .carousel-missing { width: 1fr; height: auto; color: $error; }
    ImageCarousel .carousel-nav { height: 1; width: 1fr; }
    ImageCarousel Button.arrow { min-width: 3; width: 3; height: 1; margin: 0; border: none; }
    ImageCarousel .counter { width: 1fr; content-align: center middle; color: $text-muted; }
    ImageCarousel:focus .counter { color: $accent; text-style: bold; }
    """

    index: reactive[int] = reactive(0, init=False)  # the first picture is shown after the first paint (on_mount)

    class OpenRequested(Message):
        def __init__(self, path: Path, paths: list[Path] | None = None) -> None:
            super().__init__()
            self.path = path
            self.paths = paths or [path]

    def __init__(self, paths: list[Path], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths = paths
        self._pixels: dict[Path, tuple[int, int] | None] = {}
        self._problems: dict[Path, str | None] = {}  # why a picture cannot be shown, once decoded
        self._prepared = False
        self._vault_root: Path | None = None  # the vault whose media/ the pictures are fetched into
        self._box: tuple[int, int] = (0, 0)
        self._showing = asyncio.Lock()

    def compose(self) -> ComposeResult:
        yield Center(classes="carousel-slot")
        if len(self.paths) > 1:
            with Horizontal(classes="carousel-nav"):
                yield Button("◀", classes="arrow", id="prev", compact=True)
                yield Static(self._counter(), classes="counter")
                yield Button("▶", classes="arrow", id="next", compact=True)

    def on_mount(self) -> None:
        # The arrows are for the mouse: the keyboard has Left/Right on the carousel itself, which
        # takes the focus and shows it. Focusable, they were stops of their own before it.
        for arrow in self.query(Button):
            arrow.can_focus = False
        # The slot takes the picture's size now; the picture itself comes right after the first
        # paint (text first: the image library and the encoding do not hold up the screen).
        self._box = self._slot_size()
        self.query_one(".carousel-slot", Center).styles.height = self._box[1] if self._box[1] else "auto"
        host_of(self.app).when_painted(self._show_soon)  # at once in an app that is not ours
        # The terminal's size changes the rows allowed even when this widget's width does not.
        self.screen.screen_layout_refresh_signal.subscribe(self, self._layout_refreshed)

    def _show_soon(self) -> None:
        if self.is_attached:  # not removed while the first frame was drawn
            # Once laid out (sized for an estimate, a Sixel picture was drawn twice and tmux kept
            # a strip of the first), and on this widget's own queue: awaited among the screen's
            # after-refresh callbacks, the decoding thread held up the screen's updates (and the
            # echo of every key) meanwhile.
            self.call_after_refresh(self.call_later, self._show, self.index)

    def _layout_refreshed(self, _screen: object) -> None:
        if self._slot_size() != self._box:
            self.call_later(self._refit)

    @property
    def current(self) -> Path:
        return self.paths[self.index]

    def _counter(self) -> str:
        return f"{self.index + 1} / {len(self.paths)}"

    def pixels(self, path: Path) -> tuple[int, int] | None:
        """The size the slot is laid out for: from the file's header until the picture is decoded
        (no Pillow, no decoding before the first paint)."""
        if path not in self._pixels:
            self._pixels[path] = header_size(path)
        return self._pixels[path]

    def _prepare(self) -> None:
        """In a thread: what showing the pictures needs and costs time (Pillow, textual-image, and
        with PostgreSQL the pictures another machine made, fetched into this vault's media/)."""
        from tui_agent.ui.images import load_textual_image

        self._check_all()
        load_textual_image()

    def _check_all(self) -> None:
        """Decode every picture once (after the first paint): a broken one takes no rows."""
        from tui_agent.core.media_files import local_file

        for path in self.paths:
            if path in self._problems:
                continue
            try:
                local_file(self._vault_root, path)  # the file itself, or the database's copy fetched into the cache
                _format, width, height = verify_image(path)
            except (ImageCheckError, OSError) as exc:
                self._pixels[path], self._problems[path] = None, str(exc)
            else:
                self._pixels[path], self._problems[path] = (width, height), None

    def _cols(self) -> int:
        """The width to fill: the carousel's own when laid out, else what the screen allows."""
        width = self.content_size.width or max(20, self.app.size.width - 12)
        return max(8, min(MAX_COLS, width))

    def _max_rows(self) -> int:
        return max(4, int(self.app.size.height * MAX_ROWS_SHARE))

    def _slot_size(self) -> tuple[int, int]:
        from tui_agent.ui.images import fit

        cols, max_rows = self._cols(), self._max_rows()
        sizes = [fit(px, cols, max_rows) for p in self.paths if (px := self.pixels(p)) is not None]
        if not sizes:
            return cols, 0
        return cols, max(rows for _, rows in sizes)

    def _image_widget(self, index: int) -> Widget:
        from tui_agent.ui.images import fit

        path = self.paths[index]
        problem = self._problems.get(path)
        if problem is not None:
            return Static(
                visible(f"image unavailable: {path.name}\n{problem}"), classes="carousel-missing", markup=False
            )
        px = self.pixels(path) or (1, 1)
        cols, rows = fit(px, self._box[0], self._box[1])
        widget: Widget = host_of(self.app).image_class(str(path), classes="carousel-image")
        widget.styles.width = cols
        widget.styles.height = rows
        return widget

    async def _show(self, index: int) -> None:
        async with self._showing:  # a resize and a key can both ask; one slot change at a time
            slot = self.query_one(".carousel-slot", Center)
            if not self._prepared:
                # Off the event loop: decoding the pictures and (the first time) importing
                # textual-image take a fifth of a second, which keys typed meanwhile waited for.
                vault = host_of(self.app).vault
                self._vault_root = vault.root if vault is not None else None
                await asyncio.to_thread(self._prepare)
                self._prepared = True
                if not self.is_attached:
                    return  # the conversation was left meanwhile
            self._box = self._slot_size()
            slot.styles.height = self._box[1] if self._box[1] else "auto"
            await slot.remove_children()
            await slot.mount(self._image_widget(self.index))
            for counter in self.query(".counter").results(Static):
                counter.update(self._counter())
        # Graphics drawn while the layout was still settling can be painted over by it: draw once
        # more (not pictures drawn in text cells, whose second drawing only cost time).
        from tui_agent.ui.images import drawn_in_text

        if not all(drawn_in_text(type(widget)) for widget in slot.children):
            self.set_timer(0.3, lambda: [widget.refresh() for widget in slot.query("*")])

    async def watch_index(self, index: int) -> None:
        if self.is_mounted:
            await self._show(index)

    def on_resize(self) -> None:
        # Measured after the layout settles: during the event the new width is not final yet.
        # On this widget's own queue: awaited among the screen's after-refresh callbacks, a refit
        # waiting for a picture being shown held the screen's updates back for good (a deadlock
        # seen once in a few hundred turns: the next reply was never drawn).
        self.call_after_refresh(self.call_later, self._refit)

    async def _refit(self) -> None:
        if self.is_mounted and self._slot_size() != self._box:
            await self._show(self.index)

    def action_previous(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index - 1) % len(self.paths)

    def action_next(self) -> None:
        if len(self.paths) > 1:
            self.index = (self.index + 1) % len(self.paths)

    def action_open(self) -> None:
        self.post_message(self.OpenRequested(self.current, self.paths))

    def on_click(self, event: events.Click) -> None:
        """A click on the picture opens it full size (the arrows only turn pages)."""
        widget = event.widget
        while widget is not None and widget is not self:
            if widget.has_class("carousel-image"):  # the picture, or a part of it (a Sixel widget's inner one)
                self.action_open()
                return
            widget = widget.parent  # type: ignore[assignment]

    @on(Button.Pressed, "#prev")
    def _prev_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_previous()

    @on(Button.Pressed, "#next")
    def _next_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_next()
