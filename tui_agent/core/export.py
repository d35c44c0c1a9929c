"""Taking a conversation elsewhere: Markdown (images copied beside it) and JSON (every stored field).

The JSON form round-trips: ``import_json`` reads it back as a new conversation of this vault.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_agent.core import export_schema, md_safe, media_files, safe_write
from tui_agent.core.export_schema import ExportError
from tui_agent.core.safe_write import TargetExists
from tui_agent.core.store import history
from tui_agent.core.store.models import Attachment, Conversation, Message, MessageRevision
from tui_agent.core.textsafe import visible
from tui_agent.core.vault import Vault

FORMAT = export_schema.FORMAT
FORMAT_VERSION = export_schema.FORMAT_VERSION
ROLE_TITLES = {"user": "User", "assistant": "Assistant", "error": "Error", "system": "System"}


@dataclass(frozen=True)
class ExportResult:
    path: Path
    images: int
    problems: tuple[str, ...] = ()  # pictures left out for a reason other than being gone (one line each)


def slug(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return value[:40] or "conversation"


def default_name(conversation: Conversation, fmt: str) -> str:
    return f"conversation-{conversation.id}-{slug(conversation.title)}.{fmt}"


# ------------------------------------------------------------------ Markdown
def to_markdown(
    vault: Vault,
    conversation_id: int,
    out: Path,
    *,
    reasoning: bool = False,
    messages: list[Message] | None = None,
    force: bool = False,
) -> ExportResult:
    """Write ``out`` (Markdown) and copy the conversation's images into ``<out stem>_files/`` beside it.

    Nothing is written through a symlink, and nothing that exists is replaced unless ``force``
    (see :mod:`safe_write`); stored text stays text in the Markdown (see :mod:`md_safe`)."""
    conversation = _conversation(conversation_id)
    if not force and os.path.lexists(out):
        raise TargetExists(f"{out} exists (give --force to replace it)")
    rows = messages if messages is not None else history.recent_messages(conversation_id)
    attachments = history.attachments_for([m.id for m in rows])
    out.parent.mkdir(parents=True, exist_ok=True)
    images = _ImageCopier(vault, out.with_name(out.stem + "_files"), force)
    title = conversation.title or f"Conversation {conversation.id}"
    lines = [f"# {md_safe.text(title)}", ""]
    started = md_safe.text(str(conversation.created_at)[:19])
    lines.append(f"*Exported from tui-agent · conversation {conversation.id} · started {started}*")
    lines.append("")
    try:
        for message in rows:
            copied = [images.copy(path) for path in attachments.get(message.id, [])]
            lines.extend(_message_markdown(message, copied, reasoning))
    finally:
        images.close()
    safe_write.write_new(out, ("\n".join(lines).rstrip() + "\n").encode("utf-8"), force=force)
    return ExportResult(out, len(images.copied), tuple(images.problems))


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(conversation_id: int) -> str:
    """The JSON export as text. JSON escapes C0 controls itself; C1 controls and bidi overrides are
    escaped too (``\\u009b``), so printed to a terminal it does nothing, and it reads back the same."""
    text = json.dumps(to_json(conversation_id), ensure_ascii=False, indent=2) + "\n"
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json(conversation_id: int, out: Path, *, force: bool = False) -> None:
    """Write the JSON export to ``out`` (never through a symlink, never over a file unless ``force``)."""
    text = json_text(conversation_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_new(out, text.encode("utf-8"), force=force)


def _message_markdown(message: Message, images: list[str | None], reasoning: bool) -> list[str]:
    lines: list[str] = []
    if message.tool_call_id is not None and message.role != "assistant":
        name = message.tool_name or message.role
        command = f"{name} {message.tool_arguments or '{}'}"
        lines += [
            "<details>",
            f"<summary>Tool result · {md_safe.text(name)} · {md_safe.text(_tool_status(message))}</summary>",
            "",
            _fence(visible(f"{command}\n\n{message.content}"), "bash"),
            "",
            "</details>",
            "",
        ]
        lines += _image_lines(images)
        return lines
    if message.role == "assistant" and not message.content and message.tool_calls:
        return []  # the call itself is in the tool result block that follows
    title = ROLE_TITLES.get(message.role, message.role)
    lines += [f"## {md_safe.text(title)}", ""]
    thought = getattr(message, "reasoning", "") or ""
    if reasoning and thought:
        lines += [
            "<details>",
            "<summary>Thinking</summary>",
            "",
            _quote(md_safe.markdown(thought)),
            "",
            "</details>",
            "",
        ]
    if message.content:
        lines += [md_safe.markdown(message.content), ""]
    if message.status not in ("complete", ""):
        lines += [f"*({md_safe.text(message.status)})*", ""]
    lines += _image_lines(images)
    return lines


def _image_lines(images: list[str | None]) -> list[str]:
    lines = []
    for image in images:
        lines += [f"![image]({image})" if image else "*(image no longer in the vault)*", ""]
    return lines


class _ImageCopier:
    """Copies vault images into the export's ``_files`` folder: made on the first image, never a
    symlink, each file created new (or replaced with ``force``)."""

    def __init__(self, vault: Vault, folder: Path, force: bool) -> None:
        self.vault = vault
        self.folder = folder
        self.force = force
        self.copied: dict[str, str] = {}
        self.problems: list[str] = []  # pictures that could not be had (damaged, database unreachable)
        self._fd: int | None = None

    def copy(self, relative: str) -> str | None:
        if relative in self.copied:
            return self.copied[relative]
        try:
            source = media_files.local_file(self.vault.root, relative)  # made on another machine: fetched
        except media_files.MediaUnavailable as exc:
            if not exc.missing:
                self.problems.append(str(exc))
            return None
        name = re.sub(r"[^A-Za-z0-9._-]", "_", relative.removeprefix("media/").replace("/", "_")).lstrip(".")
        if self._fd is None:
            self._fd = safe_write.open_folder(self.folder)
        safe_write.write_new(self.folder / name, source.read_bytes(), force=self.force, dir_fd=self._fd)
        self.copied[relative] = f"{self.folder.name}/{name}"
        return self.copied[relative]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
    _keep_pictures(vault, [a["path"] for m in checked["messages"] for a in m["attachments"]])
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


def _keep_pictures(vault: Vault, paths: list[str]) -> None:
    """With PostgreSQL, the pictures an import names that this vault has go into the database too,
    so that other machines show them (a path the database holds already keeps its picture)."""
    from tui_agent.core.store.errors import StoreError

    for relative in dict.fromkeys(paths):
        try:
            if (vault.root / relative).is_file():
                media_files.keep(vault.root, relative)
        except (StoreError, OSError) as exc:
            raise ExportError(f"{relative} could not be stored ({exc}); nothing was imported") from None


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
