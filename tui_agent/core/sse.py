"""Server-sent events as the WHATWG spec reads them: the ``data`` of each event, parsed leniently.

Lines end at CR, LF or CRLF only (a CR at the end of one network chunk and an LF at the start of
the next are one line break); U+2028, U+2029, U+0085 and the other Unicode line breaks are text.
The stream is UTF-8, decoded incrementally (a character split across chunks stays whole), with
one leading BOM dropped. https://html.spec.whatwg.org/multipage/server-sent-events.html
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any, NamedTuple

from tui_agent.core.llm_errors import LLMError

_LINE_BREAK = re.compile("\r\n|\r|\n")  # the spec's three; never str.splitlines()' dozen


class Event(NamedTuple):
    """One dispatched event: its data (``data:`` lines joined by LF), type and last event id."""

    data: str
    event: str = "message"
    id: str = ""


class LineSplitter:
    """Text in chunks -> complete lines, split on CR, LF and CRLF only."""

    def __init__(self) -> None:
        self._pending = ""
        self._after_cr = False  # the last chunk ended with CR: an LF first in the next one belongs to it

    def feed(self, text: str) -> list[str]:
        if not text:
            return []
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = text.endswith("\r")
        lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
        lines[0] = self._pending + lines[0]
        self._pending = lines.pop()
        return lines

    def close(self) -> Iterator[str]:
        if self._pending:
            yield self._pending
        self._pending = ""


class EventParser:
    """Lines -> events, by the spec's field rules (comments, ``event``, ``data``, ``id``, ``retry``)."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self.last_id = ""
        self.retry_ms: int | None = None

    def line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment (": OPENROUTER PROCESSING", keep-alives)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry_ms = int(value)
        return None  # any other field is ignored

    def _dispatch(self) -> Event | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return Event("\n".join(data), event or "message", self.last_id)

    def close(self) -> Event | None:
        """The stream ended: an event without its closing blank line is still delivered (lenient:
        several servers end on ``data: [DONE]`` with no blank line)."""
        return self._dispatch()


class Decoder:
    """Bytes in chunks -> events."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")("replace")
        self._lines = LineSplitter()
        self._events = EventParser()
        self._started = False

    def feed(self, chunk: bytes) -> list[Event]:
        return self._feed_text(self._text.decode(chunk))

    def close(self) -> list[Event]:
        lines = self._lines.feed(self._text.decode(b"", final=True)) + list(self._lines.close())
        found = [event for event in map(self._events.line, lines) if event is not None]
        last = self._events.close()
        return [*found, last] if last is not None else found

    def _feed_text(self, text: str) -> list[Event]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        line = self._events.line
        return [event for event in map(line, self._lines.feed(text)) if event is not None]


async def sse_events(chunks: AsyncIterator[bytes]) -> AsyncGenerator[Event, None]:
    decoder = Decoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event


async def sse_data(response: Any) -> AsyncGenerator[str, None]:
    """The ``data`` of each server-sent event of an HTTP response, read as its bytes arrive."""
    decoder = Decoder()  # (sse_events inlined: one generator less per chunk on the streaming path)
    async with aclosing(response.aiter_bytes()) as received:  # closed with this one (see core.loop)
        async for chunk in received:
            for event in decoder.feed(chunk):
                yield event.data
    for event in decoder.close():
        yield event.data


def payloads(data: str, url: str) -> list[Any]:
    """One event's JSON; servers that omit the blank line between events put several in one."""
    try:
        return [json.loads(data)]
    except ValueError:
        pass
    parts = [line for line in data.split("\n") if line.strip() and line.strip() != "[DONE]"]
    if len(parts) > 1:
        return [loads(part, url) for part in parts]
    return [loads(data, url)]


def loads(text: str, url: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        line = " ".join(text.split())[:120]
        raise LLMError(f"data that is not JSON: {line!r}", "bad_stream") from None


def whole_reply(payload: Any) -> Any:
    """A non-streamed completion as one chunk; its calls are complete, so they get positions."""
    if not isinstance(payload, dict):
        return payload
    chunk = dict(payload)
    choices = []
    for choice in payload.get("choices") or []:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            message = dict(choice["message"])
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                message["tool_calls"] = [
                    {"index": i, **c} if isinstance(c, dict) and "index" not in c else c for i, c in enumerate(calls)
                ]
            choice = {**choice, "delta": message}
        choices.append(choice)
    chunk["choices"] = choices
    return chunk
