"""Chat bubbles: the user's (text and images in one bubble), the assistant's (streamed Markdown),
error cards and notices."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.spinner import Spinner

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

    from tui_agent.ui.widgets.long_text import LongText

LONG_LINES = 2_000  # replies longer than this are shown as windowed plain text, not Markdown
LONG_CHARS = 200_000


def is_long(text: str) -> bool:
    return len(text) > LONG_CHARS or text.count("\n", 0, LONG_CHARS + 1) >= LONG_LINES


class UserBubble(Vertical):
    """One bubble: text above the images, or images only."""

    def __init__(self, text: str, images: list[Path], *, message_id: int | None = None) -> None:
        super().__init__(classes="bubble user")
        self.text = text
        self.images = images
        self.message_id = message_id

    def compose(self) -> ComposeResult:
        if self.text:
            yield Static(self.text, classes="user-text", markup=False)
        if self.images:
            yield ImageCarousel(self.images)


class AssistantBubble(Vertical):
    """Streams Markdown through ``Markdown.get_stream`` (``update`` per token is quadratic)."""

    def __init__(
        self, text: str = "", *, status: str = "complete", message_id: int | None = None, thinking: bool = False
    ) -> None:
        super().__init__(classes="bubble assistant")
        self.initial = text
        self.status = status
        self.message_id = message_id
        self.thinking = thinking
        self._stream: MarkdownStream | None = None
        self._parts: list[str] = []
        self._long: LongText | None = None
        self._chars = len(text)
        self._newlines = text.count("\n")

    def compose(self) -> ComposeResult:
        # Imported here: markdown-it costs ~40 ms and is not needed for an empty first screen.
        from textual.widgets import Markdown

        if self.thinking:
            yield Spinner("thinking", classes="thinking")
        if is_long(self.initial):
            yield from self._long_view(self.initial)
        else:
            yield Markdown(self.initial, classes="reply")
        if self.status not in ("complete", "streaming"):
            yield Static(f"({self.status})", classes="reply-status")

    @property
    def text(self) -> str:
        return self.initial + "".join(self._parts)

    def _long_view(self, text: str) -> ComposeResult:
        from tui_agent.ui.widgets.long_text import LongText

        self._long = LongText(text, classes="reply-long")
        yield self._long
        yield Static(self._long_note(), classes="reply-long-note", markup=False)

    def _long_note(self) -> str:
        lines = len(self._long.lines) if self._long is not None else 0
        return f"long reply ({lines:,} lines) shown as plain text: click it, then scroll or use the arrow keys"

    async def write(self, fragment: str) -> None:
        self._parts.append(fragment)
        if self._long is not None:
            self._long.append(fragment)
            self.query_one(".reply-long-note", Static).update(self._long_note())
            return
        self._chars += len(fragment)
        self._newlines += fragment.count("\n")
        if self._chars > LONG_CHARS or self._newlines >= LONG_LINES:
            # Past this size Markdown layout would freeze the app: switch to the plain, windowed view.
            if self._stream is not None:
                await self._stream.stop()
                self._stream = None
            for widget in self.query(".reply, .thinking"):
                await widget.remove()
            await self.mount_all(list(self._long_view(self.text)))
            return
        if self._stream is None:
            for spinner in self.query(".thinking"):
                await spinner.remove()
            from textual.widgets import Markdown

            self._stream = Markdown.get_stream(self.query_one(".reply", Markdown))
        await self._stream.write(fragment)

    async def finish(self, status: str) -> None:
        for spinner in self.query(".thinking"):
            await spinner.remove()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if status != "complete":
            self.status = status
            await self.mount(Static(f"({status})", classes="reply-status"))


class ErrorCard(Static):
    """A red card with a friendly message; the raw details are in logs/agent.log."""

    def __init__(self, message: str) -> None:
        super().__init__(message, classes="error-card", markup=False)


class NoticeCard(Static):
    def __init__(self, text: str, *, classes: str = "notice") -> None:
        super().__init__(text, classes=classes, markup=False)
