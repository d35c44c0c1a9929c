"""Taking a conversation elsewhere: Markdown (images copied beside it) and JSON (every stored field).

The JSON form round-trips: ``import_json`` reads it back as a new conversation of this vault.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_agent.core import export_schema
from tui_agent.core.export_schema import ExportError
from tui_agent.core.store import history
from tui_agent.core.store.models import Attachment, Conversation, Message, MessageRevision
from tui_agent.core.vault import Vault

FORMAT = export_schema.FORMAT
FORMAT_VERSION = export_schema.FORMAT_VERSION
ROLE_TITLES = {"user": "User", "assistant": "Assistant", "error": "Error", "system": "System"}


@dataclass(frozen=True)
class ExportResult:
    path: Path
    images: int


def slug(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return value[:40] or "conversation"


def default_name(conversation: Conversation, fmt: str) -> str:
    return f"conversation-{conversation.id}-{slug(conversation.title)}.{fmt}"


# ------------------------------------------------------------------ Markdown
def to_markdown(
    vault: Vault, conversation_id: int, out: Path, *, reasoning: bool = False, messages: list[Message] | None = None
) -> ExportResult:
    """Write ``out`` (Markdown) and copy the conversation's images into ``<out stem>_files/`` beside it."""
    conversation = _conversation(conversation_id)
    rows = messages if messages is not None else history.recent_messages(conversation_id)
    attachments = history.attachments_for([m.id for m in rows])
    files_dir = out.with_name(out.stem + "_files")
    copied: dict[str, str] = {}
    lines = [f"# {conversation.title or f'Conversation {conversation.id}'}", ""]
    lines.append(f"*Exported from tui-agent · conversation {conversation.id} · started {conversation.created_at[:19]}*")
    lines.append("")
    for message in rows:
        images = [_copy_image(vault, path, files_dir, copied) for path in attachments.get(message.id, [])]
        lines.extend(_message_markdown(message, images, reasoning))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return ExportResult(out, len(copied))


def _message_markdown(message: Message, images: list[str | None], reasoning: bool) -> list[str]:
    lines: list[str] = []
    if message.tool_call_id is not None and message.role != "assistant":
        command = f"{message.tool_name or message.role} {message.tool_arguments or '{}'}"
        lines += [
            "<details>",
            f"<summary>Tool result · {message.tool_name or message.role} · {_tool_status(message)}</summary>",
            "",
            _fence(f"{command}\n\n{message.content}", "bash"),
            "",
            "</details>",
            "",
        ]
        lines += _image_lines(images)
        return lines
    if message.role == "assistant" and not message.content and message.tool_calls:
        return []  # the call itself is in the tool result block that follows
    title = ROLE_TITLES.get(message.role, message.role)
    lines += [f"## {title}", ""]
    thought = getattr(message, "reasoning", "") or ""
    if reasoning and thought:
        lines += ["<details>", "<summary>Thinking</summary>", "", _quote(thought), "", "</details>", ""]
    if message.content:
        lines += [message.content, ""]
    if message.status not in ("complete", ""):
        lines += [f"*({message.status})*", ""]
    lines += _image_lines(images)
    return lines


def _image_lines(images: list[str | None]) -> list[str]:
    lines = []
    for image in images:
        lines += [f"![image]({image})" if image else "*(image no longer in the vault)*", ""]
    return lines


def _copy_image(vault: Vault, relative: str, files_dir: Path, copied: dict[str, str]) -> str | None:
    if relative in copied:
        return copied[relative]
    source = vault.root / relative
    if not source.is_file():
        return None
    name = relative.removeprefix("media/").replace("/", "_")
    files_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, files_dir / name)
    copied[relative] = f"{files_dir.name}/{name}"
    return copied[relative]


def _tool_status(message: Message) -> str:
    try:
        value = json.loads(message.content)
    except json.JSONDecodeError:
        return message.status
    return str(value.get("status", message.status)) if isinstance(value, dict) else message.status


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines())


# ---------------------------------------------------------------------- JSON
def to_json(conversation_id: int) -> dict[str, Any]:
    """Every stored field of the conversation, its messages, attachments and revisions."""
    conversation = _conversation(conversation_id)
    rows = history.all_messages(conversation_id)  # every branch, not only the one on screen
    ids = [m.id for m in rows]
    attachments: dict[int, list[dict[str, Any]]] = {}
    for attachment in Attachment.select().where(Attachment.message.in_(ids)).order_by(Attachment.id):
        attachments.setdefault(attachment.message_id, []).append(_fields(attachment, drop=("message",)))
    revisions: dict[int, list[dict[str, Any]]] = {}
    for revision in MessageRevision.select().where(MessageRevision.message.in_(ids)).order_by(MessageRevision.id):
        revisions.setdefault(revision.message_id, []).append(_fields(revision, drop=("message",)))
    messages = []
    for message in rows:
        entry = _fields(message, drop=("conversation",))
        entry["attachments"] = attachments.get(message.id, [])
        entry["revisions"] = revisions.get(message.id, [])
        messages.append(entry)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "conversation": _fields(conversation),
        "messages": messages,
    }


def _fields(row: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    return {name: getattr(row, field.column_name) for name, field in row._meta.fields.items() if name not in drop}


def import_json(vault: Vault, data: Any) -> int:
    """Store an exported conversation as a new conversation; return its id. Ids are renumbered.

    The whole file is checked first (:func:`export_schema.check`): a wrong field is one line that
    names it, and nothing is written. Attachment paths must be image paths under this vault's
    ``media/`` (the same rules as ``show_image``): an export cannot make the app read, show or
    send any other file."""
    checked = export_schema.check(data)
    for message in checked["messages"]:
        for attachment in message["attachments"]:
            attachment["path"] = _checked_path(vault, attachment)
    db = Message._meta.database
    with db.atomic():
        conversation = Conversation.create(title=checked["title"] or "imported")
        new_ids: dict[Any, int] = {}
        previous: int | None = None  # exports without parent links become one straight branch
        for entry in checked["messages"]:
            values = dict(entry["values"])
            # Branches keep their shape; an export without parent links becomes one straight branch.
            parent = values.get("parent_id")  # None: the message before; 0: a branch's first message
            values["parent_id"] = (new_ids.get(parent) if parent else parent) if entry["has_parent"] else previous
            message = Message.create(conversation=conversation.id, **values)
            new_ids[entry["id"]] = previous = message.id
            for attachment in entry["attachments"]:
                Attachment.create(message=message.id, **attachment)
            for revision in entry["revisions"]:
                MessageRevision.create(message=message.id, **revision)
        conversation.leaf_id = new_ids.get(checked["leaf_id"]) if checked["leaf_id"] is not None else None
        conversation.save()
    return int(conversation.id)


def _checked_path(vault: Vault, attachment: Any) -> str:
    from tui_agent.core.tools.vault_paths import SHOW_RE, PathRejected, media_path

    raw = attachment["path"]
    try:
        media_path(vault, str(raw), SHOW_RE)
    except PathRejected:
        raise ExportError(f"attachment path {raw!r} is not an image under media/; nothing was imported") from None
    return str(raw) if str(raw).startswith("media/") else f"media/{raw}"


def _conversation(conversation_id: int) -> Conversation:
    try:
        return history.get_conversation(conversation_id)
    except LookupError as exc:
        raise ExportError(str(exc)) from None
