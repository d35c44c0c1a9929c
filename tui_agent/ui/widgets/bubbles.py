"""Chat bubbles: the user's (text and images in one bubble), the assistant's (streamed Markdown),
error cards and notices."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.widgets import Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.reply_preview import INLINE_CLASSES, ReplyPreview, inline_css, preview
from tui_agent.ui.warmup import markdown_ready
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.carousel import ImageCarousel

if TYPE_CHECKING:
    from textual.content import Content

    from tui_agent.ui.widgets.long_text import LongText
    from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown, ReplyStream
    from tui_agent.ui.widgets.thinking import ThinkingBlock

LONG_LINES = 2_000  # replies longer than this are shown as windowed plain text, not Markdown
LONG_CHARS = 200_000


def is_long(text: str) -> bool:
    return len(text) > LONG_CHARS or text.count("\n", 0, LONG_CHARS + 1) >= LONG_LINES


class UserBubble(Static):
    """One bubble: text above the images, or images only.

    Text alone (most messages) is drawn by the bubble itself: one widget, not a container and a
    child, which halves what opening a conversation mounts, styles and lays out."""

    def __init__(
        self, text: str, images: list[Path], *, message_id: int | None = None, alternatives: list[int] | None = None
    ) -> None:
        self.text = text
        self.images = images
        self.message_id = message_id
        self.alternatives = alternatives or []
        self._alone = not images and not self._has_bar()
        if self._alone:
            super().__init__(visible(text), classes="bubble user user-text", markup=False)
        else:
            super().__init__(classes="bubble user")

    def _has_bar(self) -> bool:
        return len(self.alternatives) > 1 and self.message_id is not None

    def compose(self) -> ComposeResult:
        if self._alone:
            return
        if len(self.alternatives) > 1 and self.message_id is not None:
            yield AlternativesBar(self.alternatives, self.message_id, kind="branch")
        if self.text:
            yield Static(visible(self.text), classes="user-text", markup=False)
        if self.images:
            yield ImageCarousel(self.images)


class AssistantBubble(Static):
    """Streams Markdown through ``Markdown.get_stream`` (``update`` per token is quadratic).

    A finished reply from history that needs no Markdown blocks (see reply_preview) and has nothing
    around it is drawn by the bubble itself, one widget; anything mounted in it later (Markdown,
    a status, alternatives) moves the text into a child first (``_unfold``)."""

    COMPONENT_CLASSES = INLINE_CLASSES
    DEFAULT_CSS = inline_css("AssistantBubble")

    def __init__(
        self,
        text: str = "",
        *,
        status: str = "complete",
        message_id: int | None = None,
        thinking: bool = False,
        alternatives: list[int] | None = None,
        reasoning: str = "",
        preview: bool = False,
    ) -> None:
        """``preview``: a reply from history, drawn without Markdown where that changes nothing (see
        reply_preview). The others are Markdown from the start: drawn as text first and converted
        after, they showed raw Markdown and made the log jump once per reply."""
        self.initial = text
        self.preview = preview
        self.reasoning = reasoning
        self.status = status
        self.message_id = message_id
        self.thinking = thinking
        self.alternatives = alternatives or []
        self._stream: ReplyStream | None = None
        self._parts: list[str] = []
        self._long: LongText | None = None
        self._chars = len(text)
        self._newlines = text.count("\n")
        alone = _drawn_alone(self)
        self._alone = alone is not None
        super().__init__(alone or "", classes="bubble assistant", expand=True)

    def compose(self) -> ComposeResult:
        if self._alone:
            return
        if len(self.alternatives) > 1 and self.message_id is not None:
            yield AlternativesBar(self.alternatives, self.message_id, kind="alternative")
        if self.thinking:
            from tui_agent.ui.widgets.spinner import Spinner  # a live reply: not on the first paint

            yield Spinner("thinking", classes="thinking")
        if self.reasoning.strip():
            from tui_agent.ui.widgets.thinking import ThinkingBlock

            yield ThinkingBlock(self.reasoning)
        if is_long(self.initial):
            yield from self._long_view(self.initial)
        elif self.preview and (shown := ReplyPreview(visible(self.initial), classes="reply")).exact:
            yield shown
        elif self.thinking and not self.initial and not markdown_ready():  # a live reply
            # The first reply after start-up: its first words are drawn while the warm-up still
            # imports Markdown (importing it here would wait for that thread, and so would the
            # request). They stay a preview while the text is one Markdown would draw the same.
            yield ReplyPreview("", classes="reply")
        else:
            # Imported here: markdown-it and Textual's Markdown cost ~60 ms, not needed for an empty
            # first screen nor for replies drawn without it.
            from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

            yield ReplyMarkdown(visible(self.initial), classes="reply")
        if self.status not in ("complete", "streaming"):
            yield Static(visible(f"({self.status})"), classes="reply-status", markup=False)

    @property
    def is_long_view(self) -> bool:
        """Shown as windowed plain text (a reply too long for Markdown)."""
        return self._long is not None

    @property
    def text(self) -> str:
        return self.initial + "".join(self._parts)

    async def _unfold(self) -> None:
        """Something is mounted in a bubble that drew its text itself: the text moves into a child."""
        if self._alone:
            self._alone = False
            self.update("")
            await self.mount(ReplyPreview(visible(self.text), classes="reply"))

    async def upgrade(self) -> ReplyMarkdown:
        """The reply as a Markdown widget (in place of its preview, if it has one); the first part of
        a streamed reply."""
        from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

        await self._unfold()

        for found in self.query_children(".reply").results(ReplyMarkdown):
            return found
        markdown = ReplyMarkdown(visible(self.text), classes="reply")
        previews = list(self.query_children(ReplyPreview))
        statuses = list(self.query_children(".reply-status"))
        await self.mount(markdown, before=(previews or statuses or [None])[0])
        for shown in previews:
            await shown.remove()
        return markdown

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
            for widget in self.query_children(".reply, .thinking"):
                await widget.remove()
            await self.mount_all(list(self._long_view(self.text)))
            return
        if self._stream is None:
            # The words first, the spinner's removal after: awaited first, it let a frame be drawn
            # without them, and the first words came a frame later.
            spinners = self.query_children(".thinking")
            shown = self.query_children(ReplyPreview)
            if shown and not markdown_ready():  # still drawn without Markdown while that is exact
                content, exact = preview(visible(self.text))
                if exact:
                    shown.first().update(content)
                    await spinners.remove()
                    return
            from tui_agent.ui.widgets.reply_markdown import ReplyStream

            upgraded = bool(shown)  # Markdown from here on, built from the whole text so far (this fragment too)
            self._stream = ReplyStream(self, await self.upgrade())
            if upgraded:
                await spinners.remove()
                return
            await self._stream.write(visible(fragment))
            await spinners.remove()
            return
        await self._stream.write(visible(fragment))

    async def live_thinking(self) -> ThinkingBlock:
        """The streaming thinking block above the reply (mounted on the first reasoning)."""
        from tui_agent.ui.widgets.thinking import ThinkingBlock

        for block in self.query_children(ThinkingBlock):
            return block
        for spinner in self.query_children(".thinking"):
            await spinner.remove()
        block = ThinkingBlock(live=True)
        await self.mount(block, before=await self.upgrade())
        return block

    async def clear_text(self) -> None:
        """The text streamed so far was reasoning after all: empty the reply."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.initial = ""
        self._parts.clear()
        first = await self.upgrade()
        for part in list(self.query_children(".reply"))[1:]:  # the later parts of a streamed reply
            await part.remove()
        first.sealed = False
        await first.update("")

    async def finish(self, status: str) -> None:
        for block in self.query_children(".thinking-block"):
            block.finish()  # type: ignore[attr-defined]
        for spinner in self.query_children(".thinking"):
            await spinner.remove()
        if self._stream is not None:
            await self._stream.stop(finished=True)
            self._stream = None
        if status != "complete":
            self.status = status
            await self._unfold()
            await self.mount(Static(visible(f"({status})"), classes="reply-status", markup=False))

    async def show_alternatives(self, ids: list[int]) -> None:
        """A reply that just finished as one of several (after a regenerate) shows ``◀ n / N ▶``."""
        if len(ids) > 1 and self.message_id is not None and not self.query_children(AlternativesBar):
            self.alternatives = ids
            await self._unfold()
            await self.mount(AlternativesBar(ids, self.message_id, kind="alternative"), before=0)


def _drawn_alone(bubble: AssistantBubble) -> Content | None:
    """The Content a bubble draws itself (a finished plain reply from history, nothing around it)."""
    if not bubble.preview or bubble.status != "complete" or bubble.thinking or bubble.reasoning.strip():
        return None
    if len(bubble.alternatives) > 1 or is_long(bubble.initial):
        return None
    content, exact = preview(visible(bubble.initial))
    return content if exact else None


class ErrorCard(Static):
    """A red card with a friendly message; the raw details are in logs/agent.log."""

    def __init__(self, message: str, *, message_id: int | None = None) -> None:
        super().__init__(visible(message), classes="error-card", markup=False)
        self.message_id = message_id
        self.text = message

    def rebuild(self) -> ErrorCard:
        """The same card, for the chat log to show again after releasing it (log_release)."""
        return ErrorCard(self.text, message_id=self.message_id)


class NoticeCard(Static):
    def __init__(self, text: str, *, classes: str = "notice") -> None:
        super().__init__(visible(text), classes=classes, markup=False)
        self.text = text
        self._given_classes = classes

    def rebuild(self) -> NoticeCard:
        """The same card, for the chat log to show again after releasing it (log_release)."""
        return NoticeCard(self.text, classes=self._given_classes)
