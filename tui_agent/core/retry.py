"""Retry: find the failed last turn of a conversation, so the loop can run it again from the user
message already stored (the user's message is never duplicated)."""

from __future__ import annotations

from tui_agent.core.store import history
from tui_agent.core.store.models import Message

FAILED = frozenset({"error", "cancelled", "streaming", "interrupted"})
SUPERSEDED = "superseded"


class RetryError(ValueError):
    """Nothing to retry; the message says why."""


def failed_turn(conversation_id: int) -> Message:
    """The user message of the last turn when that turn failed. Replies that broke off are marked
    ``superseded`` (kept, shown, but no longer sent to the model); finished tool results stay."""
    rows = history.recent_messages(conversation_id, limit=200)
    users = [i for i, m in enumerate(rows) if m.role == "user"]
    if not users:
        raise RetryError("nothing to retry: this conversation has no message of yours yet")
    user = rows[users[-1]]
    after = rows[users[-1] + 1 :]
    broken = [m for m in after if m.role == "assistant" and m.status in FAILED]
    finals = [i for i, m in enumerate(after) if m.role == "assistant" and m.status == "complete" and not m.tool_calls]
    if finals and not any(m.role == "error" or m.status in FAILED for m in after[finals[-1] + 1 :]):
        raise RetryError("nothing to retry: the last reply finished")
    # Otherwise it failed, was cancelled, or stopped mid-turn (no final reply was recorded).
    for message in broken:
        history.update_message(message, status=SUPERSEDED)
    return user
