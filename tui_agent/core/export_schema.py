"""The shape of a conversation export, checked whole before anything is written.

``check(data)`` walks the parsed JSON and returns it cleaned (only the fields this version stores,
each of its column's type), or raises :class:`ExportError` with one line that names the first
field that is wrong (``messages[3].tool_calls: ...``). An import never writes half a file.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMAT = "tui-agent-conversation"
FORMAT_VERSION = 1
ROLE_RE = re.compile(r"[a-z][a-z0-9_]{0,39}", re.ASCII)

# message field -> (types allowed, may be null)
_TEXT = (str,)
_MESSAGE_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "content": (_TEXT, False),
    "tool_name": (_TEXT, True),
    "tool_call_id": (_TEXT, True),
    "tool_arguments": (_TEXT, True),
    "tool_calls": (_TEXT, True),
    "model": (_TEXT, True),
    "status": (_TEXT, False),
    "prompt_tokens": ((int,), True),
    "completion_tokens": ((int,), True),
    "created_at": (_TEXT, False),
    "parent_id": ((int,), True),
    "reasoning": (_TEXT, True),
}


class ExportError(Exception):
    """An export or import failed; ``str(err)`` says why in one line."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _is(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)


def _field(where: str, value: Any, types: tuple[type, ...], nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if not _is(value, types):
        wanted = "text" if types == _TEXT else "a whole number"
        raise ExportError(f"{where}: must be {wanted}{' or null' if nullable else ''}, not {_kind(value)}")
    return value


def check_tool_calls(text: str) -> str | None:
    """Why a stored ``tool_calls`` value is not a list of calls (None when it is one)."""
    try:
        calls = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(calls, list):
        return f"must be a JSON list of calls, not {_kind(calls)}"
    for index, call in enumerate(calls):
        if not isinstance(call, dict):
            return f"call {index} must be an object, not {_kind(call)}"
        for key in ("id", "name"):
            if not isinstance(call.get(key), str) or not call[key]:
                return f'call {index} needs "{key}" (text)'
        if not isinstance(call.get("arguments"), (str, type(None))):
            return f'call {index}: "arguments" must be text'
        if not isinstance(call.get("extra"), (dict, type(None))):
            return f'call {index}: "extra" must be an object'
    return None


def check(data: Any) -> dict[str, Any]:
    """The export, cleaned, or ExportError naming the first wrong field."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ExportError(f'not a tui-agent conversation export (expected an object with "format": "{FORMAT}")')
    version = data.get("version", 1)
    if not _is(version, (int,)) or version < 1:
        raise ExportError(f"version: must be a whole number from 1, not {json.dumps(version)[:40]}")
    if version > FORMAT_VERSION:
        raise ExportError(f"version: {version} is newer than this tui-agent reads ({FORMAT_VERSION})")
    source = data.get("conversation", {})
    if source is None:
        source = {}
    if not isinstance(source, dict):
        raise ExportError(f"conversation: must be an object, not {_kind(source)}")
    title = _field("conversation.title", source.get("title", ""), _TEXT, True) or ""
    leaf = _field("conversation.leaf_id", source.get("leaf_id"), (int,), True)
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ExportError(f"messages: must be a list of objects, not {_kind(messages)}")
    cleaned = [_message(f"messages[{index}]", entry) for index, entry in enumerate(messages)]
    return {"title": title, "leaf_id": leaf, "messages": cleaned}


def _message(where: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ExportError(f"{where}: must be an object, not {_kind(entry)}")
    role = entry.get("role")
    if not isinstance(role, str) or not ROLE_RE.fullmatch(role):
        shown = json.dumps(role, ensure_ascii=True)[:40]
        raise ExportError(f"{where}.role: must be a role name such as user or assistant, not {shown}")
    values: dict[str, Any] = {"role": role}
    for name, (types, nullable) in _MESSAGE_FIELDS.items():
        if name in entry:
            values[name] = _field(f"{where}.{name}", entry[name], types, nullable)
    if values.get("tool_calls") is not None:
        problem = check_tool_calls(values["tool_calls"])
        if problem:
            raise ExportError(f"{where}.tool_calls: {problem}")
    ident = entry.get("id")
    if ident is not None and not _is(ident, (int, str)):
        raise ExportError(f"{where}.id: must be a number, not {_kind(ident)}")
    attachments = entry.get("attachments") or []
    if not isinstance(attachments, list):
        raise ExportError(f"{where}.attachments: must be a list, not {_kind(attachments)}")
    revisions = entry.get("revisions") or []
    if not isinstance(revisions, list):
        raise ExportError(f"{where}.revisions: must be a list, not {_kind(revisions)}")
    return {
        "id": ident,
        "has_parent": "parent_id" in entry,
        "values": values,
        "attachments": [_attachment(f"{where}.attachments[{i}]", a, i) for i, a in enumerate(attachments)],
        "revisions": [_revision(f"{where}.revisions[{i}]", r) for i, r in enumerate(revisions)],
    }


def _attachment(where: str, entry: Any, index: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ExportError(f"{where}: must be an object, not {_kind(entry)}")
    return {
        "path": _field(f"{where}.path", entry.get("path"), _TEXT, False),
        "position": _field(f"{where}.position", entry.get("position", index), (int,), False),
        "mime": _field(f"{where}.mime", entry.get("mime") or "image/png", _TEXT, False),
    }


def _revision(where: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ExportError(f"{where}: must be an object, not {_kind(entry)}")
    return {
        "content": _field(f"{where}.content", entry.get("content", ""), _TEXT, False),
        "reason": _field(f"{where}.reason", entry.get("reason", ""), _TEXT, False),
    }
