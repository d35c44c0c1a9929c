"""What a turn reads and writes in the store around its requests: the user's message stored with
what the request is built from (one round trip), the message a regenerate starts from, a message's
alternatives. Run on the store's thread (``worker.run``)."""

from __future__ import annotations

from typing import Any

from tui_agent.core.store import branches, context_page, history
from tui_agent.core.store.models import Message


def regenerating(message_id: int) -> tuple[Message | None, Message | None]:
    message = Message.get_or_none(Message.id == message_id)
    parent = Message.get_or_none(Message.id == message.parent_id) if message and message.parent_id else None
    return message, parent


def add_user_message(
    conversation_id: int, text: str, files: list[str], read: tuple[int, int]
) -> tuple[Message, str, list[int], tuple[list[Any], dict[int, list[str]]]]:
    """The user's message stored, the conversation's title (a new one's comes from it), its
    alternatives, and the messages of its branch the request is built from with their pictures
    (``read``: ``ContextBuilder.first_read``, at most so many rows, until so many tokens): one
    round trip to the store (history.append, store/batch.py)."""
    then = context_page.statements(conversation_id, *read)
    user, (rows, pictures, children) = history.append(conversation_id, "user", text, attachments=files, then=then)
    attachments: dict[int, list[str]] = {}
    for message_id, path in pictures.rows:
        attachments.setdefault(message_id, []).append(path)
    alternatives = branches.alternatives_in([user], children.rows).get(user.id, [])
    return user, user.conversation_title, alternatives, (rows.named(), attachments)  # type: ignore[attr-defined]


def alternatives_of(message: Message) -> list[int]:
    """``message`` and its alternatives (ids, oldest first) when it sits at a fork, else [] (the
    events carry them: the screen draws "◀ n / N ▶" without reading the store again)."""
    forks = branches.fork_parents(message.conversation_id, [message.parent_id])
    return branches.alternatives(message, forks) if forks else []
