"""What the chat log draws, read in one call on the store's thread: the messages of a page with
their pictures and alternatives (the screen builds its widgets from it and reads nothing more)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tui_agent.core.store import batch, branches, history
from tui_agent.core.store.models import Conversation, Message


@dataclass
class Page:
    rows: list[Message] = field(default_factory=list)
    attachments: dict[int, list[str]] = field(default_factory=dict)
    alternatives: dict[int, list[int]] = field(default_factory=dict)
    more: bool = False  # older (or newer) messages than these exist
    newer_after: bool = False  # (a page ending at a message) messages follow it
    title: str = ""  # the conversation's (pages that open one)

    def __len__(self) -> int:
        return len(self.rows)


def page_of(rows: list[Message], *, more: bool = False, newer_after: bool = False) -> Page:
    """``rows`` with what drawing them needs: their pictures, and their alternatives at a fork."""
    attachments = history.attachments_for([m.id for m in rows])
    forks = branches.fork_parents(rows[0].conversation_id, [m.parent_id for m in rows]) if rows else set()
    alternatives = {m.id: branches.alternatives(m, forks) for m in rows if m.parent_id in forks} if forks else {}
    return Page(rows, attachments, alternatives, more, newer_after)


def newest(
    conversation_id: int, limit: int, *, until_id: int | None = None, conversation: Conversation | None = None
) -> Page:
    """The newest ``limit`` messages of the active branch (or those ending at ``until_id``);
    ``conversation``: its row, read already."""
    before = until_id + 1 if until_id is not None else None
    rows = history.recent_messages(conversation_id, limit=limit, before_id=before, conversation=conversation)
    newer_after = bool(until_id is not None and rows and history.messages_after(conversation_id, rows[-1].id, 1))
    return page_of(rows, more=len(rows) == limit, newer_after=newer_after)


def opened(conversation_id: int, limit: int, *, until_id: int | None = None, remember: bool = True) -> Page:
    """A conversation being opened: its newest page (or the one ending at ``until_id``) and its
    title; ``remember``: it is the one the next start opens. The newest page: one round trip to
    the store (``with_page``)."""
    if until_id is not None:
        if remember:
            history.remember_conversation(conversation_id)
        conversation = history.get_conversation(conversation_id)
        page = newest(conversation_id, limit, until_id=until_id, conversation=conversation)
        page.title = conversation.title
        return page
    first = [remember_statement(conversation_id)] if remember else []
    found, page, _ = with_page(conversation_id, limit, first)
    if found is None:
        raise LookupError(f"no conversation with id {conversation_id}")
    return page


def remember_statement(conversation_id: int) -> batch.Statement:
    """What history.remember_conversation writes, as a statement to send with others."""
    sql = (
        "INSERT INTO settings (key, value) VALUES ({key}, {value})"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return sql, {"key": history.LAST_CONVERSATION_KEY, "value": str(conversation_id)}


def with_page(
    conversation_id: int, limit: int, first: Sequence[batch.Statement] = ()
) -> tuple[Conversation | None, Page, list[batch.Result]]:
    """The conversation's row and its newest page, read together with the statements ``first``
    (sent before them, in the same round trip: store/batch.py; reads, or writes that come to the
    same end when sent twice, as ``remember_statement``); and what those returned."""
    statements = [*first, ("SELECT * FROM conversations WHERE id = {conversation}", {"conversation": conversation_id})]
    statements += branches.page_statements(conversation_id, limit)
    results = batch.together(Message._meta.database, statements, repeatable=True)
    *before, found, rows, pictures, children = results
    conversations = found.models(Conversation)
    conversation = conversations[0] if conversations else None
    messages = rows.models(Message)
    attachments: dict[int, list[str]] = {}
    for message_id, path in pictures.rows:
        attachments.setdefault(message_id, []).append(path)
    alternatives = branches.alternatives_in(messages, children.rows)
    page = Page(messages, attachments, alternatives, more=len(messages) == limit)
    page.title = conversation.title if conversation is not None else ""
    return conversation, page, before


def user_texts(conversation_id: int, limit: int = 50) -> list[str]:
    """What the user wrote among the newest ``limit`` messages (Ctrl+Up recalls them)."""
    return [m.content for m in history.recent_messages(conversation_id, limit) if m.role == "user"]


def older(conversation_id: int, oldest_id: int | None, limit: int) -> Page:
    """The ``limit`` messages above ``oldest_id`` on its branch (or the newest, without one)."""
    rows = (
        history.messages_before(oldest_id, limit)
        if oldest_id is not None
        else history.recent_messages(conversation_id, limit=limit)
    )
    return page_of(rows, more=len(rows) == limit)


def newer(conversation_id: int, newest_id: int, limit: int) -> Page:
    """The ``limit`` messages after ``newest_id`` on the active branch; ``more`` if there are others."""
    rows = history.messages_after(conversation_id, newest_id, limit + 1)
    return page_of(rows[:limit], more=len(rows) > limit)


def around(conversation_id: int, message_id: int, limit: int) -> Page:
    """The page holding ``message_id``: about half of ``limit`` above it, half below."""
    after = history.messages_after(conversation_id, message_id, limit // 2)
    return newest(conversation_id, limit, until_id=after[-1].id if after else message_id)


def messages(ids: set[int]) -> Page:
    """These messages as they are stored now (those gone are left out)."""
    rows = list(Message.select().where(Message.id.in_(sorted(ids))).order_by(Message.id)) if ids else []
    return page_of(rows)


@dataclass
class Changes:
    """What another machine stored in a conversation on screen (see ui/live_updates)."""

    changed: Page  # messages on screen, as stored now
    fresh: Page  # the active branch after the last message on screen (or its newest page)
    path_ids: set[int]  # the newest page of the active branch: which messages are on it
    newest: Message | None  # the last message of the active branch


def changes(conversation_id: int, on_screen: set[int], last: int, limit: int) -> Changes:
    changed = messages(on_screen)
    rows = (
        history.messages_after(conversation_id, last, limit)
        if last
        else history.recent_messages(conversation_id, limit)
    )
    path = branches.path_messages(conversation_id, limit=limit, light=True)
    return Changes(changed, page_of(rows), {row.id for row in path}, _newest(conversation_id))


def _newest(conversation_id: int) -> Message | None:
    newest = branches.path_messages(conversation_id, limit=1)
    return newest[-1] if newest else None
