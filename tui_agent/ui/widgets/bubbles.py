"""Chat bubbles: the user's (text and images in one bubble), the assistant's (streamed Markdown),
error cards and notices."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.markdown_text import parser
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.spinner import Spinner
from tui_agent.ui.widgets.thinking import ThinkingBlock

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream


class UserBubble(Vertical):
    """One bubble: text above the images, or images only."""

    def __init__(
        self, text: str, images: list[Path], *, message_id: int | None = None, alternatives: list[int] | None = None
    ) -> None:
        super().__init__(classes="bubble user")
        self.text = text
        self.images = images
        self.message_id = message_id
        self.alternatives = alternatives or []

    def compose(self) -> ComposeResult:
        if len(self.alternatives) > 1 and self.message_id is not None:
            yield AlternativesBar(self.alternatives, self.message_id, kind="branch")
        if self.text:
            yield Static(visible(self.text), classes="user-text", markup=False)
        if self.images:
            yield ImageCarousel(self.images)


class AssistantBubble(Vertical):
    """Streams Markdown through ``Markdown.get_stream`` (``update`` per token is quadratic)."""

    def __init__(
        self,
        text: str = "",
        *,
        status: str = "complete",
        message_id: int | None = None,
        thinking: bool = False,
        alternatives: list[int] | None = None,
        reasoning: str = "",
    ) -> None:
        super().__init__(classes="bubble assistant")
        self.initial = text
        self.reasoning = reasoning
        self.status = status
        self.message_id = message_id
        self.thinking = thinking
        self.alternatives = alternatives or []
        self._stream: MarkdownStream | None = None
        self._parts: list[str] = []

    def compose(self) -> ComposeResult:
        # Imported here: markdown-it costs ~40 ms and is not needed for an empty first screen.
        from textual.widgets import Markdown

        if len(self.alternatives) > 1 and self.message_id is not None:
            yield AlternativesBar(self.alternatives, self.message_id, kind="alternative")
        if self.thinking:
            yield Spinner("thinking", classes="thinking")
        if self.reasoning.strip():
            yield ThinkingBlock(self.reasoning)
        yield Markdown(visible(self.initial), classes="reply", parser_factory=parser)
        if self.status not in ("complete", "streaming"):
            yield Static(f"({self.status})", classes="reply-status")

    @property
    def text(self) -> str:
        return self.initial + "".join(self._parts)

    async def write(self, fragment: str) -> None:
        if self._stream is None:
            for spinner in self.query(".thinking"):
                await spinner.remove()
            from textual.widgets import Markdown

            self._stream = Markdown.get_stream(self.query_one(".reply", Markdown))
        self._parts.append(fragment)
        await self._stream.write(visible(fragment))

    async def live_thinking(self) -> ThinkingBlock:
        """The streaming thinking block above the reply (mounted on the first reasoning)."""
        for block in self.query(ThinkingBlock):
            return block
        for spinner in self.query(".thinking"):
            await spinner.remove()
        from textual.widgets import Markdown

        block = ThinkingBlock(live=True)
        await self.mount(block, before=self.query_one(".reply", Markdown))
        return block

    async def clear_text(self) -> None:
        """The text streamed so far was reasoning after all: empty the reply."""
        from textual.widgets import Markdown

        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.initial = ""
        self._parts.clear()
        await self.query_one(".reply", Markdown).update("")

    async def finish(self, status: str) -> None:
        for block in self.query(ThinkingBlock):
            block.finish()
        for spinner in self.query(".thinking"):
            await spinner.remove()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if status != "complete":
            self.status = status
            await self.mount(Static(f"({status})", classes="reply-status"))

    async def show_alternatives(self, ids: list[int]) -> None:
        """A reply that just finished as one of several (after a regenerate) shows ``◀ n / N ▶``."""
        if len(ids) > 1 and self.message_id is not None and not self.query(AlternativesBar):
            self.alternatives = ids
            await self.mount(AlternativesBar(ids, self.message_id, kind="alternative"), before=0)


class ErrorCard(Static):
    """A red card with a friendly message; the raw details are in logs/agent.log."""

    def __init__(self, message: str, *, message_id: int | None = None) -> None:
        super().__init__(visible(message), classes="error-card", markup=False)
        self.message_id = message_id
        self.text = message


class NoticeCard(Static):
    def __init__(self, text: str, *, classes: str = "notice") -> None:
        super().__init__(visible(text), classes=classes, markup=False)
