"""A finished part of a streaming reply, drawn once and kept as lines: one widget, not a few dozen.

Textual lays out the whole screen at each layout (``Compositor.reflow`` walks every displayed
widget and sends each its size): a reply of a few hundred Markdown blocks is ~1,000 widgets, and a
write to its last block walked them all, so a token cost more the longer the reply was. While the
reply streams, a part sealed for a while (``ReplyStream``) is drawn once into lines (the same
lines the screen shows: the part's own compositor renders its blocks) and shown by a FrozenPart
in its place; the part itself stays in the DOM, hidden (``display: none``: the compositor skips
its subtree), with its source. It comes back (``thaw``) when the reply stops streaming, or at once
if the width changes (the lines were drawn for one width): links, selection and everything else
work on the real blocks from then on."""

from __future__ import annotations

import asyncio
import logging

from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget


def draw(part: Widget, size: Size | None = None) -> list[Strip]:
    """The lines ``part`` shows on screen now (its border box), drawn by a compositor of its own;
    ``size``: for a part hidden behind its lines (off the screen's map, it has no region).

    ``textual._compositor.Compositor`` is private: tests/performance/test_frozen_part.py checks
    that its ``reflow`` and ``render_strips`` work as used here (same lines as the screen)."""
    from textual._compositor import Compositor

    size = size or part.region.size
    compositor = Compositor()
    compositor.reflow(part, size)
    return compositor.render_strips(size)


LAYOUT_WAIT_S = 2.0  # how long drawing the lines again waits for the parts to be laid out
log = logging.getLogger("tui_agent.ui")


class FrozenPart(Widget):
    """The drawn lines of hidden ReplyMarkdown parts, in their place: the parts sealed one after
    another share one stand-in (one widget for the compositor, however long the reply), as long as
    they have no margin of their own (the reply's parts have none: their lines simply stack)."""

    DEFAULT_CSS = """
    FrozenPart { height: auto; }
    """

    def __init__(self, part: Widget, lines: list[Strip]) -> None:
        super().__init__(classes="reply-frozen")
        self.parts = [part]
        self.lines = lines
        self.heights = [len(lines)]  # each part's share of ``lines``, in order
        self.settled = False  # the reply stopped: its parts come back soon (ReplyStream.stop)
        self.drawn_width = part.region.width
        # What the lines were drawn on: the message cursor tints the reply (own_styles) while it
        # streams, and then the lines are drawn again, as the blocks would be (render_line).
        self.drawn_on = part.visual_style.background
        self._drawing_again = False
        self.styles.margin = part.styles.margin

    def takes(self, part: Widget) -> bool:
        """Can ``part``'s lines go under these (drawn at this width, neither with a margin)?"""
        no_margin = not any(self.styles.margin) and not any(part.styles.margin)
        # Not while its parts are shown to be drawn again (_draw_again): the new part gets its own.
        return self.is_attached and self.display and no_margin and part.region.width == self.drawn_width

    def extend(self, part: Widget, lines: list[Strip]) -> None:
        self.parts.append(part)
        self.lines.extend(lines)
        self.heights.append(len(lines))
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines)

    def render_line(self, y: int) -> Strip:
        if self.parts and not self._drawing_again and self.visual_style.background != self.drawn_on:
            self._drawing_again = True  # these lines meanwhile: a frame at most
            # In a task of its own: awaited in this widget's handler, the layout it waits for
            # never comes (the stand-in's own changes are handled once its handler returns).
            self.run_worker(self._draw_again(), group="draw-again", exit_on_error=False)
        return self.lines[y] if 0 <= y < len(self.lines) else Strip.blank(self.size.width)

    async def _draw_again(self) -> None:
        """The parts drawn again on the background the reply has now (a cursor or a search mark
        came or went). Their blocks were restyled with the reply, but a block's own background (a
        code block's, a quote's) is blended over the reply's, so the lines cannot simply be
        recoloured: the parts are shown for one layout (off the screen's map, Textual gives their
        widgets no size to draw at), drawn, and hidden again. Thawed meanwhile: nothing to do. No
        layout within LAYOUT_WAIT_S, or no drawing: thawed (the blocks shown, as a reply's end
        leaves them), never hidden behind lines of the old look."""
        parts = list(self.parts)
        try:
            with self.app.batch_update():
                for part in parts:
                    part.display = True
                self.display = False
            laid_out = await self._laid_out(parts)
            if not self.is_attached or self.parts[: len(parts)] != parts:
                return
            if not laid_out:
                self.thaw()
                return
            drawn = [draw(part) for part in parts]
            kept = sum(self.heights[: len(parts)])
            self.lines = [line for lines in drawn for line in lines] + self.lines[kept:]
            self.heights = [len(lines) for lines in drawn] + self.heights[len(parts) :]
            self.drawn_on = self.visual_style.background
            with self.app.batch_update():
                for part in parts:
                    part.display = False
                self.display = True
            self.refresh(layout=True)
        except Exception:
            log.exception("drawing a streaming reply's lines again failed")
            self.thaw()
        finally:
            self._drawing_again = False

    async def _laid_out(self, parts: list[Widget]) -> bool:
        """Wait for the screen's next layouts (Textual's public signal, sent once every widget has
        its size) until ``parts`` are on its map; False after LAYOUT_WAIT_S (the screen is covered,
        or held in a batch of updates)."""
        screen = self.screen
        signal = screen.screen_layout_refresh_signal
        laid_out = asyncio.Event()
        signal.subscribe(self, lambda _screen: laid_out.set(), immediate=True)
        deadline = asyncio.get_running_loop().time() + LAYOUT_WAIT_S
        try:
            # A layout after the change, always: until one, Textual may give a region worked out
            # from the old map, to widgets not sized yet.
            while True:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    async with asyncio.timeout(max(left, 0)):
                        await laid_out.wait()
                except TimeoutError:
                    return False
                if all(part.region for part in parts):
                    return True
                laid_out.clear()
        finally:
            signal.unsubscribe(self)

    def on_enter(self) -> None:
        """The pointer is over a finished reply still drawn as lines: its links and selection come
        back before a click (while it streams, the lines stay: a resting pointer would undo them)."""
        if self.settled:
            self.thaw()

    on_mouse_down = on_enter  # a click on lines the pointer rested on before they settled

    def on_resize(self) -> None:
        if self.size.width and self.size.width != self.drawn_width:
            self.thaw()

    def thaw(self) -> None:
        """The parts are shown again, this stand-in removed (in the same frame)."""
        for part in self.parts:
            if part.is_attached:
                part.display = True
        self.parts, self.heights = [], []
        if self.is_attached:
            self.remove()

    def thaw_last(self) -> None:
        """The last part alone is shown again, its lines taken off the end of these (it sits after
        this stand-in, the parts before it under it): a step of a thaw spread over several frames.
        The stand-in goes with its first part."""
        if len(self.parts) <= 1:
            self.thaw()
            return
        part, height = self.parts.pop(), self.heights.pop()
        del self.lines[len(self.lines) - height :]
        if part.is_attached:
            part.display = True
        self.refresh(layout=True)


async def freeze(part: Widget, into: FrozenPart | None = None) -> FrozenPart | None:
    """Hide ``part`` behind its lines: added under ``into``'s when it takes them (the part sealed
    just before, already drawn), else in a FrozenPart of its own (returned; None if ``part`` is not
    on the screen's map)."""
    parent = part.parent
    if not part.is_attached or not part.display or not isinstance(parent, Widget) or not part.region:
        return None
    if not part.screen.is_active:  # covered (the log, a picture, a dialog): its layout may be out of date
        return None
    lines = draw(part)
    if into is not None and into.takes(part):
        with part.app.batch_update():
            into.extend(part, lines)
            part.display = False
        return into
    frozen = FrozenPart(part, lines)
    with part.app.batch_update():
        await parent.mount(frozen, after=part)
        part.display = False
    return frozen
