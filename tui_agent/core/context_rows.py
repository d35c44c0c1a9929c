"""The tool calls of the rows a request is built from. The rows are light named tuples
(store/context_page.py, read through store/batch.py): peewee model instances cost ~10x more, a
400-message window took ~30 ms to materialise, more than everything else in the build.

Any stored row is survived: a row can come from an older version's import or another writer, so
its ``tool_calls`` may not be a list of calls. Such calls are left out here (with a log line), and
the turn still runs."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("tui_agent.context")
_warned: set[tuple[int, str]] = set()  # (message id, problem): each said once per process


def stored_calls(message: Any) -> list[dict[str, Any]]:
    """The tool calls of an assistant row, each with a text ``id``, ``name`` and ``arguments``;
    what is not a call is left out (with a log line)."""
    if not message.tool_calls:
        return []
    try:
        calls = json.loads(message.tool_calls)
    except (ValueError, RecursionError):
        _warn(message.id, "tool_calls is not JSON; its calls are left out")
        return []
    if not isinstance(calls, list):
        _warn(message.id, "tool_calls is not a list; its calls are left out")
        return []
    good = [
        call
        for call in calls
        if isinstance(call, dict)
        and isinstance(call.get("id"), str)
        and call["id"]
        and isinstance(call.get("name"), str)
        and call["name"]
        and isinstance(call.get("arguments"), (str, type(None)))
        and isinstance(call.get("extra"), (dict, type(None)))
    ]
    if len(good) < len(calls):
        _warn(message.id, f"{len(calls) - len(good)} malformed tool call(s) left out")
    return good


def _warn(message_id: int, problem: str) -> None:
    if (message_id, problem) not in _warned:
        _warned.add((message_id, problem))
        log.warning("message %s: %s", message_id, problem)
