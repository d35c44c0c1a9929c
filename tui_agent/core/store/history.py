"""Conversation and message operations. Each write is its own short transaction."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tui_agent.core.store import backends, batch, branches
from tui_agent.core.store.models import Attachment, Conversation, Message, MessageRevision, Setting, utcnow
from tui_agent.core.store.rows import upsert

if TYPE_CHECKING:  # the search is imported when one runs: not on the first paint's path
    from tui_agent.core.store.search import Page

LAST_CONVERSATION_KEY = "last_conversation"
SQL_VARIABLES = 900  # per statement: older SQLite builds allow 999


def new_conversation(title: str = "") -> Conversation:
    conversation = Conversation.create(title=title)
    remember_conversation(conversation.id)
    return conversation


def remember_conversation(conversation_id: int) -> None:
    upsert(Setting, key=LAST_CONVERSATION_KEY, value=str(conversation_id))


# One statement: the remembered conversation (when the setting holds a number), then the newest.
LAST_CONVERSATION_SQL: batch.Statement = (
    "SELECT *, 0 AS newest FROM conversations WHERE id = (SELECT CASE WHEN value <> ''"
    " AND trim(value, '0123456789') = '' THEN CAST(value AS BIGINT) END FROM settings WHERE key = {key})"
    " UNION ALL SELECT * FROM (SELECT *, 1 AS newest FROM conversations"
    " ORDER BY updated_at DESC, id DESC LIMIT 1) AS newest ORDER BY newest",
    {"key": LAST_CONVERSATION_KEY},
)


def last_conversation_in(result: batch.Result) -> Conversation | None:
    """The conversation LAST_CONVERSATION_SQL found (sent with others: store/batch.py)."""
    found = batch.Result(result.columns[:-1], [row[:-1] for row in result.rows[:1]]).models(Conversation)
    return found[0] if found else None


def last_conversation(stored: Mapping[str, str] | None = None) -> Conversation | None:
    """The conversation to open; ``stored``: the settings, read already (one statement fewer)."""
    if stored is None:
        (result,) = batch.together(Conversation._meta.database, [LAST_CONVERSATION_SQL])
        return last_conversation_in(result)
    remembered = stored.get(LAST_CONVERSATION_KEY)
    if remembered is not None and remembered.isdigit():
        conversation = Conversation.get_or_none(Conversation.id == int(remembered))
        if conversation is not None:
            return conversation
    return Conversation.select().order_by(Conversation.updated_at.desc(), Conversation.id.desc()).first()


def get_conversation(conversation_id: int) -> Conversation:
    conversation = Conversation.get_or_none(Conversation.id == conversation_id)
    if conversation is None:
        raise LookupError(f"no conversation with id {conversation_id}")
    return conversation


def list_conversations(limit: int = 200) -> list[Conversation]:
    query = Conversation.select().order_by(Conversation.updated_at.desc(), Conversation.id.desc()).limit(limit)
    return list(query)


def rename_conversation(conversation_id: int, title: str) -> None:
    Conversation.update(title=title.strip()[:200], updated_at=utcnow()).where(
        Conversation.id == conversation_id
    ).execute()


def delete_conversation(conversation_id: int) -> None:
    with Conversation._meta.database.atomic():
        ids = Message.select(Message.id).where(Message.conversation == conversation_id)
        Attachment.delete().where(Attachment.message.in_(ids)).execute()
        MessageRevision.delete().where(MessageRevision.message.in_(ids)).execute()
        Message.delete().where(Message.conversation == conversation_id).execute()
        Conversation.delete().where(Conversation.id == conversation_id).execute()


def add_message(
    conversation_id: int,
    role: str,
    content: str = "",
    *,
    attachments: Sequence[str] = (),
    **fields: Any,
) -> Message:
    """Insert one message (and its ordered attachments) in one transaction."""
    message, _ = append(conversation_id, role, content, attachments=attachments, **fields)
    return message


def append(
    conversation_id: int,
    role: str,
    content: str = "",
    *,
    attachments: Sequence[str] = (),
    then: Sequence[batch.Statement] = (),
    **fields: Any,
) -> tuple[Message, list[batch.Result]]:
    """Insert one message (and its ordered attachments) in one transaction, with the statements
    ``then`` after it in the same transaction (they see it); all of them one round trip to the store
    (store/batch.py). Returns the message (its ``conversation_title``: the conversation's title
    after it) and what ``then`` returned. The new message's parent is the conversation's leaf, and
    it becomes the leaf (see store.branches); a user's first words title a conversation without one."""
    for key in ("tool_calls", "tool_arguments"):
        if key in fields and not isinstance(fields[key], (str, type(None))):
            fields[key] = json.dumps(fields[key])
    values: dict[str, Any] = {"content": content, "status": "complete", "created_at": utcnow(), **fields}
    names = {name: Message._meta.fields[name].column_name for name in values}
    params: dict[str, Any] = {"conversation": conversation_id, "role": role, **values}
    columns = ["conversation_id", "role", *names.values()]
    given = ["{conversation}", "{role}", *(f"{{{name}}}" for name in names)]
    if "parent_id" not in fields:
        # The conversation's leaf, read in the statement (branches.leaf_of: NULL is the newest message).
        columns.append("parent_id")
        given.append(
            "(SELECT COALESCE(c.leaf_id, (SELECT max(m.id) FROM messages m WHERE m.conversation_id = c.id), 0)"
            " FROM conversations c WHERE c.id = {conversation})"
        )
    db = Message._meta.database
    store = backends.of(db)
    statements: list[batch.Statement] = [(sql, params) for sql in store.row_lock("conversations", "conversation")]
    statements.append((f"INSERT INTO messages ({', '.join(columns)}) VALUES ({', '.join(given)}) RETURNING *", params))
    title = _title_from(content) if role == "user" and content.strip() else ""
    statements.append(
        (
            "UPDATE conversations SET title = CASE WHEN title = '' AND {title} <> '' THEN {title} ELSE title END,"
            f" updated_at = {{now}}, leaf_id = {store.last_id('messages')} WHERE id = {{conversation}} RETURNING title",
            {"title": title, "now": utcnow(), "conversation": conversation_id},
        )
    )
    for position, path in enumerate(attachments):
        statements.append(
            (
                "INSERT INTO attachments (message_id, position, path, mime)"
                " VALUES ((SELECT leaf_id FROM conversations WHERE id = {conversation}), {position}, {path}, {mime})",
                {"conversation": conversation_id, "position": position, "path": path, "mime": _mime(path)},
            )
        )
    results = batch.together(db, [*statements, *then], atomic=True)
    written = results[len(statements) - len(attachments) - 2 :]
    inserted, updated = written[0].models(Message), written[1].rows
    if not inserted or not updated:
        raise LookupError(f"no conversation with id {conversation_id}")
    message = inserted[0]
    message.conversation_title = str(updated[0][0])  # what the caller shows
    return message, results[len(statements) :]


def update_message(message: Message, *, then: Sequence[batch.Statement] = (), **fields: Any) -> list[batch.Result]:
    """Write ``fields`` of ``message``, and run the statements ``then`` after it in the same round
    trip (store/batch.py); what they returned."""
    if "tool_calls" in fields and not isinstance(fields["tool_calls"], (str, type(None))):
        fields["tool_calls"] = json.dumps(fields["tool_calls"])
    for key, value in fields.items():
        setattr(message, key, value)
    if not then:
        message.save(only=[getattr(Message, key) for key in fields])
        return []
    columns = ", ".join(f"{Message._meta.fields[key].column_name} = {{{key}}}" for key in fields)
    values = {key: Message._meta.fields[key].db_value(value) for key, value in fields.items()}
    update = (f"UPDATE messages SET {columns} WHERE id = {{message_id_}}", {**values, "message_id_": message.id})
    return batch.together(Message._meta.database, [update, *then])[1:]


def flush_streaming(message: Message, content: str, reasoning: str | None) -> bool:
    """A streaming reply's words so far, written only while its row is still "streaming": a forced
    end (ui/lifeline, from a thread of its own) may have stored it as cancelled with more words
    meanwhile, and a flush that was on its way must not put fewer back. Whether it was written."""
    message.content, message.reasoning = content, reasoning
    query = Message.update(content=content, reasoning=reasoning).where(
        (Message.id == message.id) & (Message.status == "streaming")
    )
    return bool(query.execute())


def recent_messages(
    conversation_id: int,
    limit: int | None = None,
    before_id: int | None = None,
    *,
    conversation: Conversation | None = None,
) -> list[Message]:
    """The newest ``limit`` messages of the active branch (optionally older than ``before_id``),
    oldest first; ``conversation``: its row, read already (its leaf is not read again)."""
    return branches.path_messages(conversation_id, limit=limit, before_id=before_id, conversation=conversation)


def all_messages(conversation_id: int, limit: int | None = None, before_id: int | None = None) -> list[Message]:
    """The newest ``limit`` messages of every branch (optionally older than ``before_id``), oldest first."""
    query = Message.select().where(Message.conversation == conversation_id)
    if before_id is not None:
        query = query.where(Message.id < before_id)
    query = query.order_by(Message.id.desc())
    if limit is not None:
        query = query.limit(limit)
    return list(reversed(list(query)))


def messages_before(message_id: int, limit: int) -> list[Message]:
    """The ``limit`` messages right before ``message_id`` on its branch (the page above a message
    on screen), oldest first; as cheap deep in a conversation as at its end."""
    return branches.messages_above(message_id, limit)


def messages_after(conversation_id: int, after_id: int, limit: int) -> list[Message]:
    """The ``limit`` messages of the active branch right after ``after_id``, oldest first."""
    return branches.path_messages(conversation_id, limit=limit, after_id=after_id)


def attachments_for(message_ids: Sequence[int]) -> dict[int, list[str]]:
    """Ordered attachment paths per message id, fetched in one query (per 900 ids)."""
    result: dict[int, list[str]] = {}
    ids = list(dict.fromkeys(message_ids))
    if not ids:
        return result
    # Plain placeholders and tuples: built by peewee, the IN list and the model instances cost more
    # than the query (a 400-message request window: ~3 ms of Python for a 0.2 ms query).
    store = backends.of(Attachment._meta.database)
    for start in range(0, len(ids), SQL_VARIABLES):
        chunk = ids[start : start + SQL_VARIABLES]
        rows = store.execute(
            f"SELECT message_id, path FROM attachments WHERE message_id IN ({store.placeholders(len(chunk))})"
            " ORDER BY message_id, position",
            chunk,
        )
        for message_id, path in rows:
            result.setdefault(message_id, []).append(path)
    return result


def search(query: str, *, before: int | None = None, limit: int | None = None) -> Page:
    """A page of full-text hits, newest first (see store/search.py); ``before``: the cursor of the
    page before; ``limit``: search.PAGE unless given. Raises search.QueryError for a query with
    nothing to search for."""
    from tui_agent.core.store import search as search_store

    return backends.current().search(query, before=before, limit=search_store.PAGE if limit is None else limit)


def search_messages(query: str, limit: int = 50) -> list[tuple[int, int, str, str]]:
    """The first page of ``search``: (message id, conversation id, role, snippet); none for a query
    with nothing to search for."""
    from tui_agent.core.store.search import QueryError

    try:
        page = search(query, limit=limit)
    except QueryError:
        return []
    return [(h.message_id, h.conversation_id, h.role, h.snippet) for h in page.hits]


def list_revisions(message_id: int | None = None, limit: int = 100) -> list[MessageRevision]:
    query = MessageRevision.select().order_by(MessageRevision.id.desc()).limit(limit)
    if message_id is not None:
        query = query.where(MessageRevision.message == message_id)
    return list(query)


def restore_revision(revision_id: int) -> Message:
    """Put a revision's content back; the content it replaces becomes a revision too."""
    revision = MessageRevision.get_or_none(MessageRevision.id == revision_id)
    if revision is None:
        raise LookupError(f"no revision with id {revision_id}")
    with Message._meta.database.atomic():
        message = Message.get_by_id(revision.message_id)
        MessageRevision.create(message=message.id, content=message.content, reason=f"before restore of {revision_id}")
        message.content = revision.content
        message.save(only=[Message.content])
    return message


def _slash_names() -> set[str]:
    from tui_agent.core.slash import COMMANDS

    return {spec.name for spec in COMMANDS}


def _title_from(content: str) -> str:
    line = content.strip().splitlines()[0]
    command, _, rest = line.partition(" ")
    if line.startswith("//"):
        line = line[1:]
    elif command.startswith("/") and command.lower()[1:] in _slash_names():
        # "/imagine a red fox" is titled "a red fox"; "/generate-image 3 castles" "castles"
        rest = rest.strip()
        if command == "/generate-image":
            count, _, prompt = rest.partition(" ")
            rest = prompt.strip() if count.isdigit() and prompt.strip() else rest
        elif command == "/edit":
            rest = rest.partition(" ")[2].strip() or rest
        elif command == "/attach":
            rest = rest.partition(" ")[2].strip() or "image " + rest.rsplit("/", 1)[-1]
        line = rest or command.lstrip("/")
    return line[:60] + ("…" if len(line) > 60 else "")


def _mime(path: str) -> str:
    lower = path.lower()
    if lower.endswith((".jpg", ".jpeg")):
        return "image/jpeg"
    if lower.endswith(".gif"):
        return "image/gif"
    if lower.endswith(".webp"):
        return "image/webp"
    return "image/png"
