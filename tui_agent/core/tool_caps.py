"""Bounds on what is kept of a tool call: huge arguments become a note, huge results are cut with one."""

from __future__ import annotations

import json

MAX_TOOL_ARGUMENT_CHARS = 16_000  # longer tool arguments are not run, and kept only as a note
MAX_TOOL_RESULT_CHARS = 32_000  # longer tool results are kept cut, with a note


def stored_arguments(raw: str) -> str:
    """Tool arguments as kept (and sent back to the model): too long ones become a JSON note."""
    if len(raw) <= MAX_TOOL_ARGUMENT_CHARS:
        return raw
    note = f"{len(raw):,} characters of arguments were not kept (the limit is {MAX_TOOL_ARGUMENT_CHARS:,})"
    return json.dumps({"note": note, "start": raw[:500]}, ensure_ascii=False)


def stored_result(text: str) -> str:
    """A tool result as kept: a too long one is cut, with a note saying so."""
    if len(text) <= MAX_TOOL_RESULT_CHARS:
        return text
    status = "ok" if text.startswith('{"status": "ok"') else "error"
    note = f"the result had {len(text):,} characters; only the first {MAX_TOOL_RESULT_CHARS:,} were kept"
    return json.dumps({"status": status, "note": note, "start": text[:MAX_TOOL_RESULT_CHARS]}, ensure_ascii=False)
