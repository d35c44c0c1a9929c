"""Renders the loop's events into the conversation view's chat log (``host``: ui/host.TurnHost), only
while its conversation is on screen. Everything it draws comes on the events; it reads no store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widget import Widget

from tui_agent.core import events as ev
from tui_agent.ui.errors import cut_by_outage, friendly, friendly_title
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, NoticeCard, UserBubble
from tui_agent.ui.widgets.context_meter import ContextMeter

if TYPE_CHECKING:
    from tui_agent.ui.host import TurnHost
    from tui_agent.ui.widgets.tool_block import ToolProgress

THINKING = ".thinking-block"  # a ThinkingBlock (imported with the first one: widgets/thinking)


FRAME_S = 1 / 30
# Markdown parses and wraps its last block again at every write (and lays it out and draws it
# again at the next frame): past this many characters in that block, writes come less often (in
# proportion), so that redrawing it takes a bounded share of the time (about 150,000 characters
# redrawn a second) and a long paragraph costs linear time in total instead of quadratic. At
# 20,000 a frame, redrawing took most of a fast 20,000-token reply (its last block one paragraph of
# 140,000 characters): 9-16x the 2,000-token reply on a slow host; 4-7x at 5,000.
BLOCK_CHARS_PER_FRAME = 5_000
MAX_FRAME_S = 1.0  # reached at 150,000 characters; past LONG_CHARS the reply is plain text
# A write costs the event loop its parse and mount, then the layout and drawing of the next
# refresh. Writes are spaced by at least that cost (times this), so a fast reply takes at most about
# half of the loop and a key typed meanwhile waits for one write at most, never for a queue of
# them: at 400 tokens a second every frame's write had cost more than a frame, the loop never idled
# and keys echoed 0.3-1 s late.
INPUT_SHARE = 1.0


class DetachedStatus:
    """The status line of a conversation that is not on screen: its turn does not write it."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


class TurnView:
    def __init__(
        self,
        host: TurnHost,
        conversation_id: int | None,
        *,
        user_bubble: UserBubble | None = None,
        stored: bool = False,
    ) -> None:
        self.host = host
        self.stored = stored  # the user's message is stored (a retry, a regenerate; or once the turn started)
        self.user_bubble = user_bubble  # shown when Enter was pressed, adopted when the message is stored
        self.log = host.chat_log
        self.conversation_id = conversation_id
        self.bubble: AssistantBubble | None = None
        self.progress: dict[str, ToolProgress] = {}
        self.started = host.clock()
        self._pending: list[str] = []
        self._thoughts: list[str] = []
        self.model = ""
        self.tokens = 0  # streamed pieces of the current reply (one per token with real servers)
        self.first_token_at: float | None = None
        self._asked_at = 0.0  # when the request of the reply being shown went out (the status line's clock)
        self._thinking_shown = False
        self._words_shown = False
        self._flusher: asyncio.Task[None] | None = None
        self._write_cost = 0.0  # the last write, until the refresh that drew it (see INPUT_SHARE)
        # One write at a time: the frame flusher can be inside a write (creating the bubble's Markdown
        # stream) when the reply finishes; finishing then must wait for it, or it stops a stream whose
        # task never ran and the CancelledError from that ends the turn with an empty bubble.
        self._writing = asyncio.Lock()
        self.window_tokens: tuple[int, int] | None = None  # (estimated, budget) of the last request
        self.cursor_to_reply = False  # regenerated with the message cursor on the reply
        self.done_status: str | None = None  # the turn's end (ev.Done), None while it runs or if cancelled
        self.error_kind: str | None = None  # the kind of the turn's error (ev.ErrorEvent), if any
        self.error_text = ""

    @property
    def attached(self) -> bool:
        return self.log.conversation_id == self.conversation_id

    async def _mount(self, widget: Widget) -> None:
        if self.attached:
            await self.log.mount(widget)

    async def handle(self, event: ev.Event) -> None:
        status = self.host.status_line if self.attached else DetachedStatus()
        if not self._words_shown and isinstance(event, (ev.AssistantFinished, ev.ToolStarted, ev.ErrorEvent)):
            self._words_shown = True  # a first reply without words (tool calls): nothing waits longer
            self.host.first_words_shown()
        if isinstance(event, ev.ConversationChanged):
            self.conversation_id = event.conversation_id
            await self.host.conversation_started(event.conversation_id, event.title)
        elif isinstance(event, ev.BranchChanged):
            # Regenerate or edit: the page now ends where the new reply or message will go. A cursor
            # on the reply being regenerated moves to the new reply once it is stored.
            if self.attached:
                self.cursor_to_reply = self.log.cursor is not None and self.log.has_focus
                await self.log.show_conversation(event.conversation_id)
        elif isinstance(event, ev.TurnStarted):
            self.stored = True
            self.conversation_id = event.conversation_id
            await self._show_title(event.title)  # a new conversation is titled by its first message
            if self.user_bubble is not None and self.user_bubble.is_attached:
                self.user_bubble.message_id = event.user_message_id  # shown at Enter: nothing to read
                return
            message = event.message  # as stored: the view reads nothing back
            await self._mount(
                UserBubble(
                    message.content,
                    [self.host.vault.root / p for p in message.attachments],
                    message_id=message.id,
                    alternatives=list(message.alternatives),
                )
            )
        elif isinstance(event, ev.ContextBuilt):
            self.window_tokens = (event.estimated_tokens, event.budget_tokens)
            if self.attached:
                self.host.query_one(ContextMeter).show(event.estimated_tokens, event.budget_tokens, estimated=True)
                await self.log.mark_window_start(event.first_message_id if event.truncated else None)
        elif isinstance(event, ev.ModelSwitched):
            status.model_switched(event.model, event.reason)
        elif isinstance(event, ev.AssistantStarted):
            self.model, self.tokens, self.first_token_at = event.model, 0, None
            self._asked_at, self._thinking_shown = self.host.clock(), False
            status.waiting(event.model, self._asked_at)
            self.bubble = AssistantBubble(thinking=True)
            await self._mount(self.bubble)
        elif isinstance(event, (ev.TextDelta, ev.ReasoningDelta)):
            (self._pending if isinstance(event, ev.TextDelta) else self._thoughts).append(event.text)
            if isinstance(event, ev.TextDelta):
                self.tokens += 1
            first = self.first_token_at is None
            if first:
                self.first_token_at = self.host.clock()
            if self._flusher is None:
                # The first words show at once; later ones are written once per frame.
                self._flusher = asyncio.create_task(self._flush_soon(0.0 if first else self._frame_s()))
        elif isinstance(event, ev.TextToReasoning):
            await self.flush()
            if self.bubble is not None and self.attached and self.bubble.is_attached:
                await self.bubble.clear_text()
                block = await self.bubble.live_thinking()
                await block.replace(event.text + block.text)
        elif isinstance(event, ev.AssistantFinished):
            await self.flush()
            if event.prompt_tokens is not None and self.window_tokens is not None and self.attached:
                self.host.query_one(ContextMeter).show(event.prompt_tokens, self.window_tokens[1], estimated=False)
            status.finished(event.model, self.started, event.prompt_tokens, event.completion_tokens)
            if self.bubble is not None:
                if not event.text and not event.reasoning.strip() and self.bubble.is_attached:
                    await self.bubble.remove()
                elif self.bubble.is_attached:
                    await self.bubble.finish(event.status)
                    self.bubble.message_id = event.message_id
                    if event.alternatives:  # regenerated: "◀ n / N ▶" under it
                        await self.bubble.show_alternatives(list(event.alternatives))
                    if self.cursor_to_reply and self.log.has_focus and self.log.cursor is None:
                        self.log.move_cursor_to(self.bubble, scroll=False)  # the view follows its end
            self.bubble = None
        elif isinstance(event, ev.ToolStarted):
            from tui_agent.ui.widgets.tool_block import ToolProgress  # with the first tool call

            progress = ToolProgress(event.call_id, event.summary)
            self.progress[event.call_id] = progress
            status.tool_running(event.name, self.host.clock())
            await self._mount(progress)
        elif isinstance(event, ev.ToolFinished):
            done_progress: ToolProgress | None = self.progress.pop(event.call_id, None)
            paths = [self.host.vault.root / p for p in event.result.images]
            widget = self.log.tool_widget(event.name, event.arguments, event.result.to_json(), paths, event.message_id)
            if done_progress is not None and done_progress.is_attached:
                await self.log.mount(widget, after=done_progress)
                await done_progress.remove()
            else:
                await self._mount(widget)
            changed = event.result.data.get("ids") if event.result.data.get("kind") == "update" else None
            if changed and self.attached:
                await self.log.refresh_messages({int(i) for i in changed})  # memory_sql edited them
        elif isinstance(event, ev.ErrorEvent):
            self.error_kind, self.error_text = event.kind, event.message
            if event.message_id is not None and self.bubble is not None:
                self.bubble.message_id = event.message_id  # cut by the store: known as its row (live updates)
            await self.close_bubble("error")
            retryable = event.kind not in ("usage", "attachment", "retry")  # nothing was sent to retry
            status.failed(friendly_title(event.kind), self.started, retryable=retryable)
            if event.kind == "store_away":
                # The server is away: the status line names it (store_outage.py). A message not stored
                # waits in the composer, with no card; a stored one's turn was cut: one line says so.
                if self.stored:
                    await self._mount(ErrorCard(cut_by_outage(event.kept_in)))
            else:
                await self._mount(ErrorCard(friendly(event.kind, event.message)))
        elif isinstance(event, ev.Notice):
            await self.log.mount(NoticeCard(event.text))
        elif isinstance(event, ev.ModelNotice):
            await self._mount(NoticeCard("⚠ " + event.text, classes="notice model-notice"))
        elif isinstance(event, ev.Done):
            self.done_status = event.status
            status.done(event.status, self.started)

    async def _show_title(self, title: str) -> None:
        if self.host.conversation_id == self.conversation_id:
            await self.host.show_title(title)

    def _frame_s(self) -> float:
        """The time to the next write: a frame, or longer while the reply's last block is long or
        the last write cost more than a frame."""
        if self.bubble is None or self.bubble.is_long_view:
            return FRAME_S  # the windowed plain view appends at a constant cost
        text = self.bubble.text
        start = text.rfind("\n\n")
        block = len(text) - (start + 2 if start >= 0 else 0)
        spaced = self._write_cost * INPUT_SHARE / FRAME_S  # see INPUT_SHARE
        return min(MAX_FRAME_S, FRAME_S * max(1.0, block / BLOCK_CHARS_PER_FRAME, spaced))

    def _drawn(self, started: float) -> None:
        self._write_cost = time.perf_counter() - started

    async def _flush_soon(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._flusher = None
        await self._write_pending()

    async def flush(self) -> None:
        """Write what is pending now (end of a reply, error, cancel)."""
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        await self._write_pending()

    async def _write_pending(self) -> None:
        async with self._writing:
            await self._write_pending_now()

    async def _write_pending_now(self) -> None:
        # Tokens are written to the Markdown stream once per frame: per-token writes re-wrap the
        # paragraph thousands of times (2,000 tokens: ~3 s per token vs ~0.3 s batched).
        text = "".join(self._pending)
        thoughts = "".join(self._thoughts)
        self._pending.clear()
        self._thoughts.clear()
        if text and self.attached and self.first_token_at is not None:  # once per frame, like the text
            self.host.status_line.streaming(self.model, self.tokens, self.first_token_at)
        elif thoughts.strip() and not self.tokens and not self._thinking_shown and self.attached:
            self._thinking_shown = True  # the reasoning streams before the answer: not "waiting" any more
            self.host.status_line.thinking(self.model, self._asked_at)
        if self.bubble is None or not self.attached or not self.bubble.is_attached:
            return
        if thoughts.strip() or (thoughts and self.bubble.query_children(THINKING)):
            (await self.bubble.live_thinking()).append(thoughts)
        if text:
            for block in self.bubble.query_children(THINKING):
                block.finish()  # type: ignore[attr-defined]  # the answer started: the thinking collapses
            started = time.perf_counter()
            await self.bubble.write(text)
            self.host.call_after_refresh(self._drawn, started)
            if not self._words_shown:
                self._words_shown = True
                self.host.call_after_refresh(self.host.first_words_shown)  # once they are drawn

    async def close_bubble(self, status: str) -> None:
        await self.flush()
        if self.bubble is not None and self.bubble.is_attached:
            if self.bubble.text or self.bubble.query_children(THINKING):
                await self.bubble.finish(status)
            else:
                await self.bubble.remove()  # nothing arrived: the error card or status line says why
        self.bubble = None
        for progress in self.progress.values():
            if progress.is_attached:
                await progress.remove()
        self.progress.clear()
