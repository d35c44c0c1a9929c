"""The Markdown widget of a reply: its last block is marked with a class, not found by ``:last-child``.

A rule with ``:last-child`` (or any order pseudo-class) that can match a widget makes Textual restyle
that widget and its whole subtree every time a sibling is mounted next to it (``Widget.mount``'s
``update_styles``). A streamed reply mounts a block every few tokens, so with ``MarkdownBlock:last-child``
each new block restyled every block before it: typing during a long reply slowed as it grew (8,000
tokens at 400 a second: echo 32 ms in its first third, 434 ms in its last). Here the class
``-last`` moves to the new last block after each update or append: one block restyled, whatever the
length. Imported with the first Markdown (not on the first paint)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from textual.await_complete import AwaitComplete
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown

from tui_agent.ui.markdown_text import parser
from tui_agent.ui.typing_pace import pace_of
from tui_agent.ui.widgets.column_arrange import arrange_size
from tui_agent.ui.widgets.frozen_part import FrozenPart, freeze
from tui_agent.ui.widgets.own_styles import set_own_class

if TYPE_CHECKING:
    from textual._arrange import DockArrangeResult

log = logging.getLogger("tui_agent.ui")

LAST = "-last"


class ReplyMarkdown(Markdown):
    def __init__(self, markdown: str = "", *, classes: str = "") -> None:
        super().__init__(markdown, classes=classes, parser_factory=parser)
        self._last_block: Widget | None = None
        self.sealed = False  # a finished part of a streamed reply, followed by another part
        # Set once the text it was made with is parsed (Textual's mount handler calls update()):
        # an append before that would be undone by it (the source is set back to that text).
        self.ready = asyncio.Event()
        self._sealed_height: tuple[tuple[int, int, int], int] | None = None

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """A sealed part's height, kept while its width and blocks stay the same.

        Textual measures a container whose children all have ``height: auto`` by arranging it in
        its parent's height; the parent (the reply's bubble) grows at every write, so every sealed
        part (and every list, table and quote in it) was arranged again at each write: the cost of
        a token grew with the reply. The key is what Textual's own box-model cache is keyed on: the
        count of layouts this widget or a child asked for (``_layout_updates``) and of changes to
        its children (``_nodes._updates``)."""
        if not self.sealed:
            return super().get_content_height(container, viewport, width)
        key = (width, self._layout_updates, self._nodes._updates)
        if self._sealed_height is not None and self._sealed_height[0] == key:
            return self._sealed_height[1]
        height = super().get_content_height(container, viewport, width)
        self._sealed_height = (key, height)
        return height

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Arranged once per change to its blocks, not once per write to the reply around it
        (column_arrange)."""
        return super().arrange(arrange_size(self, size), optimal)

    def update(self, markdown: str) -> AwaitComplete:
        return self._then_mark_last(super().update(markdown))

    def append(self, markdown: str) -> AwaitComplete:
        return self._then_mark_last(super().append(markdown))

    def _then_mark_last(self, done: AwaitComplete) -> AwaitComplete:
        async def mark() -> None:
            await done
            self.mark_last()
            self.ready.set()

        return AwaitComplete(mark())

    def mark_last(self) -> None:
        """Move the class to the current last block (a no-op while it is the same block)."""
        last = self.children[-1] if self.children and not self.sealed else None
        if last is self._last_block:
            return
        # The block alone is restyled: a list or a table is dozens of widgets, and no rule styles
        # what is inside a block by ``-last`` (set_own_class checks).
        if self._last_block is not None:
            set_own_class(self._last_block, False, LAST)
        if last is not None:
            set_own_class(last, True, LAST)
        self._last_block = last

    def seal(self) -> None:
        """More of the reply follows in another part: the last block keeps its bottom margin."""
        self.sealed = True
        self.mark_last()


SEAL_AFTER_BLOCKS = 16
READY_POLL_S = 0.5


class ReplyStream:
    """Streams a reply into a row of ReplyMarkdown parts: only the last part grows.

    Like Textual's ``MarkdownStream`` (what is written while an append runs is appended next, in
    one piece), which parses only the growing (last) block again at each append. But laying a
    Markdown widget out arranges every block in it, and each append changes the last block's
    height: a reply of a few hundred blocks spent most of each frame arranging the blocks it had
    finished. Once the growing part holds more than SEAL_AFTER_BLOCKS blocks, the finished ones stay
    where they are (a sealed part: Textual keeps its arrangement) and the blocks after the last
    split point move into a new part, built from their source lines. So an append costs the same
    at the end of a long reply as at its start.

    The split is made only before a block with no top margin (a paragraph, a list, a table): the
    gap between two parts is then the sealed part's last bottom margin, exactly the gap Markdown
    puts between those two blocks inside one widget.

    One task appends, one append at a time: ``MarkdownStream.stop`` could return while a shielded
    append still ran, and an append started meanwhile parsed the lines that one was parsing (its
    blocks were mounted twice)."""

    def __init__(self, bubble: Widget, first: ReplyMarkdown) -> None:
        self.bubble = bubble
        self.live = first
        self.parts = [first]
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._text: str | None = None  # the text of the growing part (read once it is parsed)
        self.frozen: list[FrozenPart] = []  # sealed parts drawn as lines while the reply streams
        self._stop = asyncio.Event()
        self._written_at = float("-inf")
        self._pace = pace_of(bubble.app)  # while the user types, writes go right after a key
        self._task = asyncio.create_task(self._run())

    async def write(self, fragment: str) -> None:
        if self._stopping:
            raise RuntimeError("the reply's stream was stopped")
        if fragment:
            self._pending.append(fragment)
            self._wake.set()
            await asyncio.sleep(0)  # the appending task may start at once

    async def stop(self, *, finished: bool = False) -> None:
        """Append what is pending, then end (the task finishes even if the caller is cancelled).

        The frozen parts are shown as their blocks again: at once, unless the reply ``finished`` (it
        stays on screen as it is) while the user types. Then they come back one part per frame, from
        the last, each once the keys pause (``PAUSE_S``): all at once they are one layout of the
        whole reply (0.4 s or more for a long one), and the key typed meanwhile waited for it."""
        self._stopping = True
        self._stop.set()
        self._wake.set()
        await asyncio.shield(self._task)
        frozen, self.frozen = self.frozen, []
        if not frozen or not self.bubble.is_attached:
            return
        if finished and self._pace.typing():
            for stand_in in frozen:
                stand_in.settled = True
            # One under the pointer now gets no Enter event: its links come back at once.
            later: list[FrozenPart] = []
            now: list[FrozenPart] = []
            for stand_in in frozen:
                (later if stand_in.is_attached and not stand_in.is_mouse_over else now).append(stand_in)
            thaw_all(now)
            if later:
                self.bubble.run_worker(self._thaw_in_steps(later), group="thaw", exit_on_error=False)
            return
        thaw_all(frozen)

    async def _thaw_in_steps(self, frozen: list[FrozenPart]) -> None:
        try:
            for stand_in in reversed(frozen):
                while stand_in.is_attached and stand_in.parts:
                    await self._pace.until_paused()
                    if not stand_in.is_attached or not stand_in.parts:  # thawed meanwhile (a resize)
                        break
                    stand_in.thaw_last()
                    await self.bubble.wait_for_refresh()  # laid out and drawn before the next part
        except Exception:  # never left hidden
            log.exception("showing a finished reply's parts again failed")
            thaw_all(frozen)
            raise

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await self._pace.turn(self._written_at, self._stop)
            self._wake.clear()
            text = "".join(self._pending)
            self._pending.clear()
            if text and not await _ready(self.live):
                self._pending.clear()  # the reply left the screen (another conversation): nothing to draw
                return
            if text:
                self._text = (self.live.source if self._text is None else self._text) + text
                self._written_at = self._pace.clock()
                await self.live.append(text)
                if len(self.live.children) > SEAL_AFTER_BLOCKS:
                    await self._seal()
            if self._stopping and not self._pending:
                return

    async def _seal(self) -> None:
        blocks = self.live.children
        starts = block_starts(self._text or "")  # the line each block starts on: one per widget, in order
        if len(starts) != len(blocks):
            return  # not the blocks Markdown made of this text (never seen): no split
        # The last finished block the part can be split before (the growing block can still change
        # kind: "``" is a paragraph until its fence's third backtick), one with no top margin: a
        # heading's, a quote's or code's would be doubled.
        split = next((i for i in range(len(blocks) - 2, 0, -1) if not blocks[i].styles.margin.top), 0)
        if split == 0:
            return
        moved = list(blocks[split:])
        lines = (self._text or "").splitlines(keepends=True)
        tail = "".join(lines[starts[split] :])
        # Made empty and appended to: Markdown built with text takes its last line for the start of
        # the growing block (update() sets where the next append parses from), which would cut a
        # list or a table that spans several lines down to its last line at the next append.
        part = ReplyMarkdown(classes=" ".join(self.live.classes))
        with self.bubble.app.batch_update():  # no frame shows the moved blocks twice, or not at all
            await self.bubble.mount(part, after=self.live)
            if not await _ready(part):
                return
            await part.append(tail)
            await self.live.remove_children(moved)
            self.live.seal()
        self.live = part
        self._text = tail
        self.parts.append(part)
        # The part just sealed, once a refresh has laid it out with its final margins (its last
        # block lost ``-last``): drawn into lines once, its blocks leave the layout until the reply
        # stops. Only the growing part's blocks are laid out at each write.
        sealed = self.parts[-2]
        await self.bubble.wait_for_refresh()
        # Its lines go under the last stand-in's only if the part just before it is in there too.
        last = self.frozen[-1] if self.frozen else None
        into = last if last is not None and last.parts and last.parts[-1] is self.parts[-3] else None
        frozen = await freeze(sealed, into=into)
        if frozen is not None and frozen not in self.frozen:
            self.frozen.append(frozen)


def thaw_all(frozen: list[FrozenPart]) -> None:
    if not frozen:
        return
    with frozen[0].app.batch_update():
        for stand_in in frozen:
            stand_in.thaw()


async def _ready(part: ReplyMarkdown) -> bool:
    """Wait until ``part`` has parsed the text it was made with; False once it is off the screen."""
    while not part.ready.is_set():
        if part.is_mounted and not part.is_attached:  # mounted, then removed with its bubble
            return False
        try:
            async with asyncio.timeout(READY_POLL_S):
                await part.ready.wait()
        except TimeoutError:
            continue
    return part.is_attached


def block_starts(text: str) -> list[int]:
    """The first line of each top-level block of ``text``, as the reply's parser reads it."""
    return [token.map[0] for token in parser().parse(text) if token.level == 0 and token.map and token.nesting >= 0]
