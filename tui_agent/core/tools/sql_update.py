"""memory_sql UPDATE: the approval question the app computes, and the write with revisions.

The question never contains text of the query (a comment could claim anything): it says how
many messages change and shows old -> new for the first few, each cut short and with control
characters made visible, so neither a long value nor an escape sequence can reshape the modal.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from tui_agent.core.store import backends
from tui_agent.core.store.models import Message, MessageRevision
from tui_agent.core.tools.sql_guard import HIDDEN_ROLE

PREVIEW_CHARS = 70
#: How long the approved write waits for a message another writer holds (PostgreSQL).
LOCK_TIMEOUT_MS = 1000
BLOCKED = "stopped: another writer held these messages for too long (lock timeout); try again. Nothing was changed"
_SHOWN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def visible(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One line of ``text``: control and format characters shown (``␛``, ``␊``, ``<U+202E>``), cut at ``limit``."""
    out: list[str] = []
    length = 0
    for char in text:
        code = ord(char)
        if code < 0x20:
            shown = chr(0x2400 + code)
        elif code == 0x7F:
            shown = "␡"
        elif unicodedata.category(char) in _SHOWN_CATEGORIES:
            shown = f"<U+{code:04X}>"
        else:
            shown = char
        if length + len(shown) > limit:
            out.append("…")
            break
        out.append(shown)
        length += len(shown)
    return "".join(out)


def approval_question(answer: dict[str, Any]) -> str:
    """What the user approves, from the worker's count and preview only."""
    count = int(answer["count"])
    lines = [
        f"This UPDATE changes the content of {count} message{'s' if count != 1 else ''}.",
        "Each previous text is kept as a revision (tui-agent history restore ID).",
        "",
    ]
    preview = answer.get("preview", [])
    for message_id, role, old, old_len, new, new_len in preview:
        lines.append(f"#{int(message_id)} {visible(str(role), 20)}")
        lines.append(f"  old: {visible(str(old))}{_more(str(old), int(old_len))}")
        lines.append(f"  new: {visible(str(new))}{_more(str(new), int(new_len))}")
    rest = [int(i) for i in answer.get("ids", [])[len(preview) :]]
    if rest:
        shown = ", ".join(f"#{i}" for i in rest[:10])
        lines.append(f"and {len(rest)} more: {shown}{', …' if len(rest) > 10 else ''}")
    return "\n".join(lines)


def _more(shown: str, length: int) -> str:
    return f" ({length:,} chars)" if length > len(shown) or len(shown) > PREVIEW_CHARS else ""


class UpdateBlocked(Exception):
    """Another writer held one of the messages longer than ``LOCK_TIMEOUT_MS``; nothing was written."""


def apply_updates(updates: list[tuple[int, str]]) -> list[int]:
    """Write collected updates on the app connection; every previous content becomes a revision."""
    try:
        return _apply(updates)
    except backends.WriteBlocked:
        raise UpdateBlocked(BLOCKED) from None


def _apply(updates: list[tuple[int, str]]) -> list[int]:
    changed: list[int] = []
    # The dry run locked nothing: the write may meet another writer, and waits for it that long.
    with backends.current().lock_wait(LOCK_TIMEOUT_MS):
        for message_id, content in updates:
            message = Message.get_or_none((Message.id == message_id) & (Message.role != HIDDEN_ROLE))
            if message is None or message.content == content:
                continue
            MessageRevision.create(message=message.id, content=message.content, reason="memory_sql UPDATE")
            Message.update(content=content).where(Message.id == message_id).execute()
            changed.append(message_id)
    return changed
