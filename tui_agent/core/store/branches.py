"""Branches: every message links to the one before it on its branch (``parent_id``), and each
conversation remembers the last message of the branch on screen (``leaf_id``).

``parent_id``: a message id, ``0`` for the first message of a branch, or NULL for "the message
before me in this conversation" (rows written before branches existed, or by other writers).
``leaf_id``: NULL means the newest message, 0 means "before the first message".

Regenerating a reply or editing a user message adds a *sibling*: a new child of the same parent.
The active branch is the path from the leaf up to the first message; the context builder and the
chat log see only that path, while ``memory_sql`` and the JSON export see every message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import peewee as pw

from tui_agent.core.store import backends
from tui_agent.core.store.models import Conversation, Message, Setting
from tui_agent.core.store.rows import upsert

# Each message of one conversation with its effective parent (0: none).
EFFECTIVE = """
eff(id, parent) AS (
    SELECT m.id, COALESCE(m.parent_id, (
        SELECT max(p.id) FROM messages p WHERE p.conversation_id = m.conversation_id AND p.id < m.id
    ), 0)
    FROM messages m WHERE m.conversation_id = {p}
)"""

# The active branch walked up from the leaf, one primary-key lookup a step (and, for a NULL parent,
# one index lookup of the message before it), stopping as soon as the page is complete: opening or
# paging a conversation costs the same at 50 or 50,000 messages. ``wanted`` counts the messages on
# the path that the page can use (``id < before``); ``stop`` ends the walk at a message id (paging
# newer: nothing at or below ``after`` can be used). Parameters: ``{start}`` is where the walk
# starts (LEAF_START or CONVERSATION_START); before, wanted and stop are named; ``{p}`` (a leaf, then
# before twice, wanted and stop) when formatted for positional parameters (see _walk).
PATH_TEMPLATE = """
WITH RECURSIVE path(id, wanted) AS (
    SELECT start.leaf, CASE WHEN start.leaf < {before} THEN 1 ELSE 0 END FROM {start} AS start
    UNION ALL
    SELECT step.parent, path.wanted + CASE WHEN step.parent < {before} THEN 1 ELSE 0 END
    FROM path JOIN (
        SELECT m.id AS id, COALESCE(m.parent_id, (
            SELECT max(p.id) FROM messages p WHERE p.conversation_id = m.conversation_id AND p.id < m.id
        ), 0) AS parent
        FROM messages m
    ) AS step ON step.id = path.id
    WHERE step.parent != 0 AND path.wanted < {wanted} AND step.parent > {stop}
)
"""
LEAF_START = "(SELECT CAST({leaf} AS BIGINT) AS leaf)"
# The walk from a conversation's leaf, read from its row in the same statement (see leaf_of): a
# page costs one statement, not a read of the row first.
CONVERSATION_START = (
    "(SELECT CAST(COALESCE(c.leaf_id, (SELECT max(m.id) FROM messages m WHERE m.conversation_id = c.id), 0)"
    " AS BIGINT) AS leaf FROM conversations c WHERE c.id = {conversation})"
)


def path_sql(start: str) -> str:
    """The walk (PATH_TEMPLATE) from ``start``, with named parameters."""
    return PATH_TEMPLATE.replace("{start}", start)


# The newest {limit} messages of that walk ({older}: older than {before_id}): a page, for the statements below.
PAGE_SQL = (
    ", page(id) AS (SELECT id FROM messages WHERE id IN (SELECT id FROM path){older} ORDER BY id DESC LIMIT {limit})\n"
)
NO_LIMIT = 1 << 62

NEWEST_DESCENDANT_SQL = (
    "WITH RECURSIVE"
    + EFFECTIVE
    + """,
down(id, depth) AS (
    SELECT CAST({p} AS BIGINT), 0
    UNION ALL
    SELECT (SELECT max(eff.id) FROM eff WHERE eff.parent = down.id), depth + 1
    FROM down WHERE EXISTS (SELECT 1 FROM eff WHERE eff.parent = down.id)
)
SELECT id FROM down ORDER BY depth DESC LIMIT 1
"""
)


def leaf_of(conversation_id: int, conversation: Conversation | None = None) -> int | None:
    """The last message of the active branch (the newest message when none was chosen);
    ``conversation``: its row, read already."""
    if conversation is None or conversation.id != conversation_id:
        conversation = Conversation.get_or_none(Conversation.id == conversation_id)
    if conversation is not None and conversation.leaf_id is not None:
        return int(conversation.leaf_id) or None
    newest = (
        Message.select(Message.id).where(Message.conversation == conversation_id).order_by(Message.id.desc()).first()
    )
    return int(newest.id) if newest is not None else None


def set_leaf(conversation_id: int, message_id: int | None) -> None:
    Conversation.update(leaf_id=message_id).where(Conversation.id == conversation_id).execute()


def path_messages(
    conversation_id: int,
    limit: int | None = None,
    before_id: int | None = None,
    after_id: int | None = None,
    *,
    light: bool = False,
    conversation: Conversation | None = None,
) -> list[Any]:
    """Messages of the active branch, oldest first: the newest ``limit`` older than ``before_id``,
    or (with ``after_id``) the oldest ``limit`` newer than ``after_id``. ``light``: named tuples
    with the columns' names instead of model instances (about ten times cheaper)."""
    leaf = leaf_of(conversation_id, conversation)
    if leaf is None:
        return []
    return _walk(leaf, limit, before_id, after_id, light=light)


def messages_above(message_id: int, limit: int) -> list[Message]:
    """The ``limit`` messages right before ``message_id`` on its branch, oldest first. Walked up
    from it, not from the leaf: a page deep in a long conversation costs what a page at its end
    does (from the leaf, paging up to the first of 5,000 messages took 26 ms a page here)."""
    message = Message.get_or_none(Message.id == message_id)
    if message is None:
        return []
    parent = effective_parent(message)
    return _walk(parent, limit, None, None) if parent else []


def _walk(
    leaf: int, limit: int | None, before_id: int | None, after_id: int | None, *, light: bool = False
) -> list[Any]:
    """The path up from ``leaf`` (see PATH_TEMPLATE), as path_messages describes."""
    sql = path_sql(LEAF_START) + "SELECT * FROM messages WHERE id IN (SELECT id FROM path)"
    values: dict[str, object] = {
        "leaf": leaf,
        "before": NO_LIMIT if before_id is None else before_id,
        "wanted": limit if limit is not None and after_id is None else NO_LIMIT,
        "stop": after_id or 0,
        "before_id": before_id,
        "after_id": after_id,
        "limit": limit,
    }
    if before_id is not None:
        sql += " AND id < {before_id}"
    if after_id is not None:
        sql += " AND id > {after_id}"
    sql += " ORDER BY id " + ("ASC" if after_id is not None else "DESC")
    if limit is not None:
        sql += " LIMIT {limit}"
    text, params = backends.of(Message._meta.database).positional(sql, values)
    query = Message.raw(text, *params)  # peewee's raw query takes its parameters in order
    rows = list(query.namedtuples() if light else query)
    return rows if after_id is not None else list(reversed(rows))


def page_statements(conversation_id: int, limit: int, before_id: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Three statements reading the newest ``limit`` messages of a conversation's active branch
    (older than ``before_id``), which go to the server together (store/batch.py): the messages
    (``SELECT *``, oldest first), their pictures (message id, path) in order, and the children of
    their parents (id, parent id, role), where their alternatives are (see :func:`alternatives_in`)."""
    params = {
        "conversation": conversation_id,
        "before": NO_LIMIT if before_id is None else before_id,
        "wanted": limit,
        "stop": 0,
        "before_id": before_id,
        "limit": limit,
    }
    older = " AND id < {before_id}" if before_id is not None else ""
    return page_reads(path_sql(CONVERSATION_START) + PAGE_SQL.replace("{older}", older), params)


def page_reads(page: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """What :func:`page_statements` reads of a ``page`` (SQL defining ``page(id)``: messages ids)."""
    return [
        (page + "SELECT * FROM messages WHERE id IN (SELECT id FROM page) ORDER BY id", params),
        (
            page + "SELECT message_id, path FROM attachments WHERE message_id IN (SELECT id FROM page)"
            " ORDER BY message_id, position",
            params,
        ),
        (
            # "+conversation_id": each parent is looked up in messages_parent (see fork_parents).
            page + "SELECT id, parent_id, role FROM messages WHERE parent_id IN"
            " (SELECT parent_id FROM messages WHERE id IN (SELECT id FROM page)) AND +conversation_id = {conversation}"
            " ORDER BY id",
            params,
        ),
    ]


def children_statement(conversation_id: int, parent_id: int | None = None) -> tuple[str, dict[str, Any]]:
    """A statement reading the children (id, parent id, role) of ``parent_id``, or (None) of the
    parent of the conversation's leaf: with :func:`alternatives_in`, the alternatives of a message
    just written, read in the same round trip as the write."""
    if parent_id is None:
        parent = (
            "(SELECT parent_id FROM messages WHERE id = (SELECT leaf_id FROM conversations WHERE id = {conversation}))"
        )
    else:
        parent = "{parent}"
    sql = f"SELECT id, parent_id, role FROM messages WHERE parent_id = {parent} AND +conversation_id = {{conversation}}"
    return sql, {"conversation": conversation_id, "parent": parent_id}


def alternatives_in(rows: Iterable[Any], children: Iterable[tuple[Any, ...]]) -> dict[int, list[int]]:
    """What :func:`fork_parents` and :func:`alternatives` say of ``rows``, from the children of
    their parents (read with them: :func:`page_statements`): per message at a fork, its id and its
    alternatives' (oldest first). A fork is explicit (``rewind_to_parent_of`` makes it so)."""
    under: dict[int, list[tuple[int, str]]] = {}
    for child, parent, role in children:
        under.setdefault(int(parent), []).append((int(child), role))
    found: dict[int, list[int]] = {}
    for message in rows:
        if message.parent_id is None or message.role not in ("user", "assistant"):
            continue
        children_of = under.get(int(message.parent_id), [])
        if len(children_of) < 2:
            continue
        same = [child for child, role in children_of if role == message.role]
        if len(same) > 1:
            found[message.id] = same
    return found


def effective_parent(message: Message) -> int:
    if message.parent_id is not None:
        return int(message.parent_id)
    previous = (
        Message.select(Message.id)
        .where((Message.conversation == message.conversation_id) & (Message.id < message.id))
        .order_by(Message.id.desc())
        .first()
    )
    return int(previous.id) if previous is not None else 0


def siblings(message_id: int) -> list[Message]:
    """The message and its alternatives: children of the same parent with the same kind of role
    (user messages for edits, assistant replies for regenerations), oldest first."""
    message = Message.get_by_id(message_id)
    parent = effective_parent(message)
    roles = ("user",) if message.role == "user" else ("assistant",)
    store = backends.of(Message._meta.database)
    sql = (
        "WITH RECURSIVE"
        + EFFECTIVE.format(p=store.param)
        + f" SELECT * FROM messages WHERE id IN (SELECT id FROM eff WHERE parent = {store.param}) AND role IN ("
        + store.placeholders(len(roles))
        + ") ORDER BY id"
    )
    return list(Message.raw(sql, message.conversation_id, parent, *roles))


def choose(message_id: int) -> int:
    """Make the branch through ``message_id`` the active one, down to the message it was left at
    (the alternatives chosen on it kept), or to its newest descendant if it never was; returns
    the new leaf."""
    message = Message.get_by_id(message_id)
    _remember_leaving(message)
    left_at = _left_at(message_id)
    if left_at is not None and _descends(left_at, message_id):
        leaf = left_at
    else:
        store = backends.of(Message._meta.database)
        cursor = store.execute(NEWEST_DESCENDANT_SQL.format(p=store.param), (message.conversation_id, message_id))
        leaf = int(cursor.fetchone()[0])
    set_leaf(message.conversation_id, leaf)
    return leaf


# Where each branch was left: the leaf, kept under the first message of the branch (a child of a
# fork), in the settings table (one small row a branch left; memory_sql is granted nothing there).
LEFT_AT_KEY = "branch-left-at:{}"


def _left_at(message_id: int) -> int | None:
    row = Setting.get_or_none(Setting.key == LEFT_AT_KEY.format(message_id))
    return int(row.value) if row is not None and str(row.value).isdigit() else None


def _remember(branch_top: int, leaf: int) -> None:
    upsert(Setting, key=LEFT_AT_KEY.format(branch_top), value=str(leaf))


def _descends(message_id: int, ancestor: int) -> bool:
    """Whether ``message_id`` is ``ancestor`` or below it (a child is always newer than its parent)."""
    current = message_id
    while current > ancestor:
        row = Message.get_or_none(Message.id == current)
        if row is None:
            return False
        current = effective_parent(row)
    return current == ancestor


def _remember_leaving(message: Message) -> None:
    """Before the branch through ``message`` becomes the active one: the branch being left (through
    one of its siblings) keeps where it was left."""
    leaf = leaf_of(message.conversation_id)
    if leaf is None:
        return
    for sibling in siblings(message.id):
        if sibling.id != message.id and _descends(leaf, sibling.id):
            _remember(sibling.id, leaf)
            return


def rewind_to_parent_of(message_id: int) -> Message:
    """Before a regeneration or an edit: the active branch ends just before ``message_id``.
    Returns the message."""
    message = Message.get_by_id(message_id)
    leaf = leaf_of(message.conversation_id)
    if leaf is not None and _descends(leaf, message.id):
        _remember(message.id, leaf)  # the branch being left, as it was left
    parent = effective_parent(message)
    if message.parent_id is None:
        # Make the fork explicit so that fork_parents finds it with one cheap query.
        Message.update(parent_id=parent).where(Message.id == message.id).execute()
        message.parent_id = parent
    set_leaf(message.conversation_id, parent)
    return message


def fork_parents(conversation_id: int, among: Iterable[int | None] | None = None) -> set[int]:
    """Parents (0: the start) with more than one child: where alternatives or branches are.
    ``among``: only these parents are asked about (the parents of one page: an index lookup each,
    however long the conversation)."""
    if among is None:
        query = (
            Message.select(Message.parent_id)
            .where((Message.conversation == conversation_id) & Message.parent_id.is_null(False))
            .group_by(Message.parent_id)
            .having(pw.fn.COUNT(Message.id) > 1)
        )
        return {int(row.parent_id or 0) for row in query}
    wanted = sorted({parent for parent in among if parent is not None})
    if not wanted:
        return set()
    # "+conversation_id": the planner would otherwise scan the conversation's index (every message)
    # instead of looking each parent up in messages_parent.
    store = backends.of(Message._meta.database)
    sql = (
        f"SELECT parent_id FROM messages WHERE parent_id IN ({store.placeholders(len(wanted))})"
        f" AND +conversation_id = {store.param} GROUP BY parent_id HAVING count(*) > 1"
    )
    cursor = store.execute(sql, (*wanted, conversation_id))
    return {int(row[0] or 0) for row in cursor.fetchall()}


def alternatives(message: Message, forks: set[int]) -> list[int]:
    """Ids of ``message`` and its alternatives (oldest first) when it sits at a fork, else []."""
    if message.parent_id is None or message.parent_id not in forks or message.role not in ("user", "assistant"):
        return []
    found = [m.id for m in siblings(message.id)]
    return found if len(found) > 1 else []
