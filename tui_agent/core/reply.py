"""The assistant row of one reply as it streams: text and reasoning kept apart, flushed now and then."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core import llm, streaming_rows
from tui_agent.core.store import branches, history, worker
from tui_agent.core.store.models import Message, Profile
from tui_agent.core.tool_caps import stored_arguments

FLUSH_INTERVAL_S = 0.5
DRAIN_S = 3.0  # at a turn's end, how long a write still on its way is waited for
log = logging.getLogger("tui_agent.loop")


def call_dict(call: llm.ToolCall) -> dict[str, Any]:
    """A tool call as stored in ``messages.tool_calls``; provider extras ride along unchanged."""
    entry: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": stored_arguments(call.arguments)}
    if call.extra:
        entry["extra"] = call.extra  # e.g. Gemini's extra_content.google.thought_signature
    return entry


def temperature(profile: Profile) -> float | None:
    """An empty temperature field sends none (models that accept only the default)."""
    value = profile.temperature
    return None if value is None or value == "" else float(value)


class Reply:
    """The assistant row of one streamed reply: created on the first piece, flushed now and then.

    The row's flushes never hold the stream up: each goes to the store's thread in the background,
    one at a time (a flush falls due while one is on its way: the next piece after it starts the
    next), so a store 50 ms away, or a server that went away behind a pooler that waits for it,
    does not stop the words on screen. A write that failed is raised at the next piece (the turn's
    store-failure path takes it as before); the reply's last write (``save``, ``finish``) waits for
    the one on its way, so the writes reach the row in the order they were made."""

    def __init__(self, conversation_id: int, model: str, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.flush_interval_s = flush_interval_s
        self.conversation_id = conversation_id
        self.model = model
        self.parts: list[str] = []
        self.thoughts: list[str] = []
        # Held while the text moves into the reasoning, and while a forced end (another thread)
        # reads both: it sees them before the move or after it, never the text in neither or both.
        self._moving = threading.Lock()
        self.row: Message | None = None
        self.last_flush = time.monotonic()
        self._writing: asyncio.Task[None] | None = None  # the row's write on its way, if any

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.thoughts)

    async def add(self, item: Any) -> ev.Event | None:
        # The client's pieces are the loop's events (core.events): passed on as they are.
        if isinstance(item, ev.TextDelta):
            self.parts.append(item.text)
        elif isinstance(item, ev.ReasoningDelta):
            self.thoughts.append(item.text)
        elif isinstance(item, ev.TextToReasoning):
            self.move_text_to_reasoning(item.text)
        else:
            return None
        event: ev.Event = item
        if self._writing is not None:
            if not self._writing.done():
                return event  # the next flush starts once this write is through
            self._take_written()
        if self.row is None:
            # The row is made before the first words are passed on (a failure then, such as a full
            # disk, is the turn's before anything was shown); only the flushes go in the background.
            self.row = await worker.run(self._new_row, self.text, self.reasoning or None)
            self.last_flush = time.monotonic()
        elif time.monotonic() - self.last_flush > self.flush_interval_s:
            self._start(self._update(self.row, self.text, self.reasoning or None))
        return event

    def _new_row(self, text: str, reasoning: str | None) -> Message:
        """The reply's row, "streaming" (on the store's thread). It is known to a forced end from the
        moment it exists, not once the event loop has run again: a loop stuck after the insert
        would otherwise leave it "streaming" for good."""
        row = history.add_message(
            self.conversation_id, "assistant", text, reasoning=reasoning, model=self.model, status="streaming"
        )
        streaming_rows.streaming(row.id, self._so_far)
        return row

    def _start(self, write: Coroutine[Any, Any, None]) -> None:
        self._writing = asyncio.ensure_future(write)
        # Read here too: a turn that ends by another failure leaves no unread exception behind.
        self._writing.add_done_callback(lambda done: done.cancelled() or done.exception())
        self.last_flush = time.monotonic()

    def _take_written(self) -> None:
        """The write that went is through: its failure, if any, is the turn's now."""
        writing, self._writing = self._writing, None
        if writing is not None and not writing.cancelled() and (failure := writing.exception()) is not None:
            raise failure

    async def _through(self) -> None:
        """Until the write on its way (if any) is through, whatever came of it."""
        if self._writing is not None:
            await asyncio.wait([self._writing])

    async def _settled(self) -> None:
        """The write on its way (if any) is through; raises its failure."""
        await self._through()
        self._take_written()

    async def drain(self) -> None:
        """The turn ends: the write on its way (if any) is through, whatever came of it (a failure
        was the turn's already, or the turn ended for another reason); waited for ``DRAIN_S`` at
        most (a store that does not answer: the turn ends, the write stays with the store's thread)."""
        if self._writing is not None:
            await asyncio.wait([self._writing], timeout=DRAIN_S)
            if not self._writing.done():
                log.warning("a reply's write was still on its way to the store when its turn ended")
        self._writing = None
        # The row stays known to a forced end until a write ended it (save, finish): one whose last
        # write failed or was given up is still "streaming" in the store, and a forced end cancels
        # it (only if it still streams there, so one ended meanwhile is left as it is).

    async def _update(self, row: Message, text: str, reasoning: str | None) -> None:
        await worker.run(history.flush_streaming, row, text, reasoning)

    async def save(self, status: str) -> Message | None:
        await self._settled()
        if self.row is not None:
            row = self.row
            await worker.run(
                history.update_message, row, content=self.text, reasoning=self.reasoning or None, status=status
            )
            streaming_rows.ended(row.id)
        return self.row

    def move_text_to_reasoning(self, text: str) -> None:
        """The words streamed as text were reasoning after all: ``text`` (they) begins the reasoning."""
        with self._moving:
            self.parts.clear()
            self.thoughts.insert(0, text)

    def _so_far(self) -> tuple[str, str | None]:
        """The text and reasoning now (read by a forced end, from another thread)."""
        with self._moving:
            return "".join(list(self.parts)), "".join(list(self.thoughts)) or None

    async def finish(self, item: llm.Completion) -> Message:
        row, _ = await self.finish_with_alternatives(item)
        return row

    async def finish_with_alternatives(self, item: llm.Completion) -> tuple[Message, list[int]]:
        """The finished row, and its alternatives (ids, oldest first; [] when it is at no fork)
        read with it: one round trip to the store."""
        await self._settled()
        row, alternatives = await worker.run(self._finish, self._final(item))
        streaming_rows.ended(row.id)
        return row, alternatives

    def _finish(self, fields: dict[str, Any]) -> tuple[Message, list[int]]:
        if self.row is None:
            self.row, (children,) = history.append(
                self.conversation_id, "assistant", then=[branches.children_statement(self.conversation_id)], **fields
            )
        else:
            (children,) = history.update_message(
                self.row, then=[branches.children_statement(self.conversation_id, self.row.parent_id)], **fields
            )
        return self.row, branches.alternatives_in([self.row], children.rows).get(self.row.id, [])

    def _final(self, item: llm.Completion) -> dict[str, Any]:
        return {
            "content": item.text,
            "reasoning": item.reasoning or None,
            "status": "complete",
            "model": self.model,
            "prompt_tokens": item.prompt_tokens,
            "completion_tokens": item.completion_tokens,
            "tool_calls": [call_dict(c) for c in item.tool_calls] or None,
        }
