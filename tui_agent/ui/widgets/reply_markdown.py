"""The Markdown widget of a reply: its last block is marked with a class, not found by ``:last-child``.

A rule with ``:last-child`` (or any order pseudo-class) that can match a widget makes Textual restyle
that widget and its whole subtree every time a sibling is mounted next to it (``Widget.mount``'s
``update_styles``). A streamed reply mounts a block every few tokens, so with ``MarkdownBlock:last-child``
each new block restyled every block before it: typing during a long reply slowed as it grew (8,000
tokens at 400 a second: echo 32 ms in its first third, 434 ms in its last). Here the class
``-last`` moves to the new last block after each update or append: one block restyled, whatever the
length. Imported with the first Markdown (not on the first paint)."""

from __future__ import annotations

from textual.await_complete import AwaitComplete
from textual.widget import Widget
from textual.widgets import Markdown

from tui_agent.ui.markdown_text import parser

LAST = "-last"


class ReplyMarkdown(Markdown):
    def __init__(self, markdown: str = "", *, classes: str = "") -> None:
        super().__init__(markdown, classes=classes, parser_factory=parser)
        self._last_block: Widget | None = None

    def update(self, markdown: str) -> AwaitComplete:
        return self._then_mark_last(super().update(markdown))

    def append(self, markdown: str) -> AwaitComplete:
        return self._then_mark_last(super().append(markdown))

    def _then_mark_last(self, done: AwaitComplete) -> AwaitComplete:
        async def mark() -> None:
            await done
            self.mark_last()

        return AwaitComplete(mark())

    def mark_last(self) -> None:
        """Move the class to the current last block (a no-op while it is the same block)."""
        last = self.children[-1] if self.children else None
        if last is self._last_block:
            return
        if self._last_block is not None:
            self._last_block.remove_class(LAST)
        if last is not None:
            last.add_class(LAST)
        self._last_block = last
