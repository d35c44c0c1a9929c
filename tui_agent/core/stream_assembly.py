"""Assemble one reply from raw chat-completion chunks (plain dicts, every field kept).

Handles the stream shapes real servers send: tool-call deltas with or without ``index``,
``id``/``name`` repeated in every delta, ``content`` as a list of parts (Mistral thinking
parts), reasoning in ``reasoning_content`` or ``reasoning``, and inline ``<think>`` tags,
including a reply that starts inside an unopened ``<think>`` and only closes it.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
from typing import Any

from tui_agent.core.events import ReasoningDelta, TextDelta, TextToReasoning
from tui_agent.core.llm_errors import LLMError

log = logging.getLogger("tui_agent.llm")

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"
CALL_KEYS = frozenset({"index", "id", "type", "function"})


class ToolCall:
    """One tool call of a reply, assembled from its deltas (a plain class: see core.events)."""

    __slots__ = ("arguments", "extra", "id", "name")

    def __init__(self, id: str, name: str, arguments: str = "", extra: dict[str, Any] | None = None) -> None:
        self.id = id
        self.name = name
        self.arguments = arguments
        self.extra: dict[str, Any] = {} if extra is None else extra  # provider fields sent back unchanged

    def __repr__(self) -> str:
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r}, extra={self.extra!r})"


class Completion:
    """The end of one response."""

    __slots__ = ("completion_tokens", "finish_reason", "prompt_tokens", "reasoning", "text", "tool_calls")

    def __init__(
        self,
        text: str = "",
        tool_calls: list[ToolCall] | None = None,
        finish_reason: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        reasoning: str = "",
    ) -> None:
        self.text = text
        self.tool_calls: list[ToolCall] = [] if tool_calls is None else tool_calls
        self.finish_reason = finish_reason
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.reasoning = reasoning

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"Completion({fields})"


Piece = TextDelta | ReasoningDelta | TextToReasoning


class ThinkSplitter:
    """Splits streamed content into answer text and ``<think>`` reasoning, tags cut anywhere."""

    def __init__(self) -> None:
        self.inside = False
        self.seen_tag = False
        self.pending = ""  # a possible partial tag held back
        self.after_close = False  # newlines right after </think> are not part of the answer
        self.text: list[str] = []
        self.reasoning: list[str] = []

    def feed(self, chunk: str) -> list[Piece]:
        out: list[Piece] = []
        buffer = self.pending + chunk
        self.pending = ""
        while buffer:
            tag = CLOSE_TAG if self.inside else OPEN_TAG
            other = CLOSE_TAG if not self.inside else None
            at = buffer.find(tag)
            orphan = buffer.find(other) if other and not self.seen_tag else -1
            if orphan != -1 and (at == -1 or orphan < at):
                # A close tag never opened: everything before it was reasoning.
                self._emit(out, buffer[:orphan], reasoning=True)
                moved = "".join(self.text)
                self.text.clear()
                if moved:
                    self.reasoning.insert(0, moved)
                    out.insert(0, TextToReasoning(moved))
                self.seen_tag = True
                self.after_close = True
                buffer = buffer[orphan + len(CLOSE_TAG) :]
                continue
            if at != -1:
                self._emit(out, buffer[:at], reasoning=self.inside)
                self.inside = not self.inside
                self.seen_tag = True
                buffer = buffer[at + len(tag) :]
                self.after_close = not self.inside
                continue
            keep = _partial_tag_suffix(buffer, (tag,) if self.seen_tag else (tag, CLOSE_TAG))
            self._emit(out, buffer[: len(buffer) - keep], reasoning=self.inside)
            self.pending = buffer[len(buffer) - keep :]
            break
        return out

    def flush(self) -> list[Piece]:
        out: list[Piece] = []
        self._emit(out, self.pending, reasoning=self.inside)
        self.pending = ""
        return out

    def _emit(self, out: list[Piece], text: str, *, reasoning: bool) -> None:
        if not text:
            return
        if reasoning:
            self.reasoning.append(text)
            out.append(ReasoningDelta(text))
        else:
            if self.after_close:
                text = text.lstrip("\r\n")
                if not text:
                    return
                self.after_close = False
            self.text.append(text)
            out.append(TextDelta(text))


def _partial_tag_suffix(buffer: str, tags: tuple[str, ...]) -> int:
    """Length of the longest suffix of ``buffer`` that starts one of ``tags``."""
    best = 0
    for tag in tags:
        for size in range(min(len(tag) - 1, len(buffer)), 0, -1):
            if buffer.endswith(tag[:size]):
                best = max(best, size)
                break
    return best


class StreamAssembler:
    """Feed raw chunk dicts; get display pieces back; ``finish()`` gives the Completion."""

    def __init__(self) -> None:
        self.splitter = ThinkSplitter()
        self.field_reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.by_index: dict[Any, ToolCall] = {}
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None

    def feed(self, chunk: Any) -> list[Piece]:
        if not isinstance(chunk, dict):
            raise LLMError(f"unexpected stream data (a JSON {type(chunk).__name__}, not an object)", "bad_stream")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage(usage)
        groq = chunk.get("x_groq")  # Groq reports usage here on the last chunk
        if isinstance(groq, dict) and isinstance(groq.get("usage"), dict):
            self._usage(groq["usage"])
        out: list[Piece] = []
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise LLMError("unexpected stream data: 'choices' is not a list", "bad_stream")
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if delta is None:
                delta = choice.get("message")  # a non-streamed reply, or a server mixing the two
            if delta is not None and not isinstance(delta, dict):
                raise LLMError("unexpected stream data: 'delta' is not an object", "bad_stream")
            if delta:
                out.extend(self._delta(delta))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return out

    def _usage(self, usage: dict[str, Any]) -> None:
        if isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            self.completion_tokens = usage["completion_tokens"]

    def _delta(self, delta: dict[str, Any]) -> list[Piece]:
        out: list[Piece] = []
        for key in ("reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str) and value:
                self.field_reasoning.append(value)
                out.append(ReasoningDelta(value))
                break  # a server sending both (vLLM during the rename) sends the same text twice
        content = delta.get("content")
        if isinstance(content, str):
            out.extend(self.splitter.feed(content))
        elif isinstance(content, list):
            out.extend(self._parts(content))
        elif content is not None:
            raise LLMError(f"unexpected stream data: 'content' is a {type(content).__name__}", "bad_stream")
        calls = delta.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise LLMError("unexpected stream data: 'tool_calls' is not a list", "bad_stream")
        for raw in calls or []:
            self._tool_call(raw)
        return out

    def _parts(self, parts: list[Any]) -> list[Piece]:
        out: list[Piece] = []
        for part in parts:
            if isinstance(part, str):
                out.extend(self.splitter.feed(part))
                continue
            if not isinstance(part, dict):
                raise LLMError(f"unexpected stream data: a content part is a {type(part).__name__}", "bad_stream")
            kind = part.get("type")
            if kind == "thinking":
                text = _thinking_text(part.get("thinking"))
                if text:
                    self.field_reasoning.append(text)
                    out.append(ReasoningDelta(text))
            elif isinstance(part.get("text"), str):
                out.extend(self.splitter.feed(part["text"]))
            else:
                log.info("ignored a content part of type %r", kind)
        return out

    def _tool_call(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise LLMError("unexpected stream data: a tool call is not an object", "bad_stream")
        call_id = raw.get("id") or ""
        index = raw.get("index")
        call: ToolCall | None
        function = raw.get("function") or {}
        if not isinstance(function, dict):
            raise LLMError("unexpected stream data: a tool call's 'function' is not an object", "bad_stream")
        if index is None:
            # Gemini sends parallel calls without index: a new id starts a new call; without ids,
            # a different name, or a name again after complete arguments, does.
            call = self.calls[-1] if self.calls else None
            name = function.get("name") if isinstance(function.get("name"), str) else None
            if (
                call is None
                or (call_id and call.id and call_id != call.id)
                or (not call_id and name and call.name and name != call.name and not name.startswith(call.name))
                or (not call_id and name and call.name == name and _complete_json(call.arguments))
            ):
                call = self._new_call(None)
        else:
            call = self.by_index.get(index)
            if call is None or (call_id and call.id and call_id != call.id):
                call = self._new_call(index)
        if call_id and not call.id:
            call.id = str(call_id)
        name = function.get("name")
        if isinstance(name, str) and name and name != call.name:
            # Some servers repeat the whole name in every delta; others could split it.
            call.name = name if not call.name or name.startswith(call.name) else call.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments += arguments
        elif isinstance(arguments, dict):
            call.arguments += json.dumps(arguments)
        for key, value in raw.items():
            if key not in CALL_KEYS and value is not None:
                call.extra[key] = _merge(call.extra.get(key), value)

    def _new_call(self, index: Any) -> ToolCall:
        call = ToolCall(id="", name="")
        self.calls.append(call)
        if index is not None:
            self.by_index[index] = call
        return call

    def flush(self) -> list[Piece]:
        """Text held back as a possible partial tag, at the end of the stream."""
        return self.splitter.flush()

    def finish(self) -> Completion:
        calls = [c for c in self.calls if c.name or c.arguments]
        for call in calls:
            if not call.name:
                raise LLMError("a tool call without a function name", "bad_stream")
            if not call.id:
                call.id = new_call_id()
        reasoning = ("".join(self.field_reasoning) + "".join(self.splitter.reasoning)).strip()
        text = "".join(self.splitter.text)
        return Completion(
            text=text.lstrip() if self.splitter.seen_tag else text,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            reasoning=reasoning,
        )


def new_call_id() -> str:
    """An id for a call the server sent without one: 9 letters and digits, the strictest form
    servers accept (Mistral rejects any other)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(9))


def _complete_json(text: str) -> bool:
    if not text.strip():
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _thinking_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_thinking_text(v) for v in value)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return str(value["text"])
    return ""


def _merge(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = _merge(merged.get(key), value)
        return merged
    return new
