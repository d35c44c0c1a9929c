"""Server-sent events as the servers send them: the ``data`` of each event, parsed leniently."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from tui_agent.core.llm_errors import LLMError


async def sse_data(response: Any) -> AsyncGenerator[str, None]:
    """The ``data`` of each server-sent event; comments (``: OPENROUTER PROCESSING``) are skipped."""
    lines: list[str] = []
    async with aclosing(response.aiter_lines()) as received:  # closed with this one (see core.loop)
        async for line in received:
            if not line:
                if lines:
                    yield "\n".join(lines)
                    lines = []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if name.strip() == "data":
                lines.append(value[1:] if value.startswith(" ") else value)
    if lines:
        yield "\n".join(lines)


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
