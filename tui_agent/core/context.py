"""The one context builder: every request, first or after a tool, is made here."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from tui_agent.core import image_cache, media_files
from tui_agent.core.context_rows import stored_calls
from tui_agent.core.models.caps import accepts_images
from tui_agent.core.models.fit import Fit, history_budget
from tui_agent.core.store import batch, context_page
from tui_agent.core.store.context_page import CHARS_PER_TOKEN, EXCLUDED_ROLES, EXCLUDED_STATUSES
from tui_agent.core.store.models import Message, Profile
from tui_agent.core.vault import Vault

TOOL_RULES = """\
You are tui-agent, a helpful assistant in a terminal chat app. You are the only one who reasons;
tools are your hands. Call a tool through function calling when it helps, then answer naturally
from its result.

Tool rules:
- generate_image makes images from a prompt into the user's vault. Pick a descriptive path such as
  'animals/red-fox.png'. After an image is generated you may stay silent or keep talking; never
  mention links, file paths or placeholders, and never claim that you generated the image. When you
  are shown the generated image afterwards, talk about what you actually see.
- edit_image changes a picture the conversation holds (image: its media/... path from an earlier
  result) into a NEW picture: use it when the user wants a picture changed ("make it bluer"), not
  generate_image, which would draw a different one. The same rules as after generate_image apply.
- web_search finds current information on the web; cite what you use.
- memory_sql runs ONE SQLite SELECT or UPDATE over the chat history table
  messages(id, conversation_id, role, content, tool_name, model, status, created_at).
  Use it to recall or correct earlier conversations. Only content can be updated.
- show_image shows an existing vault image (path under media/) to the user.
- A tool result with "status":"error" explains what went wrong; fix the call or tell the user.
"""

log = logging.getLogger("tui_agent.context")


def _tool_rules() -> str:
    """The rules, naming the SQL the memory tool takes on this store."""
    from tui_agent.core.store import backends
    from tui_agent.core.store.errors import StoreError

    try:
        dialect = backends.current().memory_runner().dialect
    except StoreError:  # no store open
        return TOOL_RULES
    return TOOL_RULES.replace("ONE SQLite SELECT", f"ONE {dialect} SELECT")


IMAGE_TOKENS = 1000
IMAGES_FOLLOW = "The tool finished; its image output follows."
__all__ = ["CHARS_PER_TOKEN", "EXCLUDED_ROLES", "EXCLUDED_STATUSES", "ContextBuilder", "ContextWindow"]


class ContextWindow(NamedTuple):
    """What the last built request holds: for the context meter and the "window starts here" marker.

    (A NamedTuple, as ContextBuilder is a plain class: a dataclass costs ~1 ms of ``exec`` at
    import, on the path of the first request.)"""

    estimated_tokens: int
    budget_tokens: int
    first_message_id: int | None
    truncated: bool  # older messages of the branch were left out to fit
    text_tokens: int = 0  # the estimate without pictures (what a server's prompt_tokens is held against)


class ContextBuilder:
    """Builds the ``messages`` list for a conversation from the database."""

    def __init__(self, vault: Vault, max_messages: int = 400) -> None:
        self.vault = vault
        self.max_messages = max_messages
        self.window: ContextWindow | None = None
        self.fit: Fit | None = None
        self.system_tokens = 0
        self._pixels_from: float = 0
        # Rows read already (with the user's message: turn_rows.add_user_message), for the next build.
        self._prefetched: tuple[int, int, list[Any], dict[int, list[str]]] | None = None

    def first_read(self, profile: Profile) -> tuple[int, int]:
        """What the next build for ``profile`` reads (``prefetched`` takes it, read with the user's
        message): the newest messages of the active branch, at most this many, until their text
        passes this many tokens (the profile's budget: a request's history never gets more, see
        ``history_budget``); store/context_page.py reads them in one statement."""
        return self.max_messages, int(profile.context_budget_tokens)

    def prefetched(
        self, conversation_id: int, read: tuple[int, int], rows: list[Any], attachments: dict[int, list[str]]
    ) -> None:
        """The messages ``first_read`` named (``read``), oldest first, and their pictures, read
        already: the next build of this conversation uses them instead of reading them again."""
        self._prefetched = (conversation_id, read[1], rows, attachments)

    def system_message(self, profile: Profile) -> dict[str, Any]:
        parts = [_tool_rules()]
        if profile.system_prompt.strip():
            parts.append(profile.system_prompt.strip())
        if profile.memory.strip():
            parts.append("Memory (notes the user wants you to keep in mind):\n" + profile.memory.strip())
        return {"role": "system", "content": "\n\n".join(parts)}

    def build(
        self,
        conversation_id: int,
        profile: Profile,
        model: str | None = None,
        *,
        window: int | None = None,
        tools_tokens: int = 0,
    ) -> list[dict[str, Any]]:
        """The request's messages. ``window``: the context the model really runs with (None:
        unknown); the history then gets the smaller of the profile's budget and what the window
        leaves after the system prompt, ``tools_tokens`` of tool schemas and the reply. The system
        prompt and the newest message are always sent; older turns leave first."""
        system = self.system_message(profile)
        system_tokens = self.system_tokens = len(system["content"]) // CHARS_PER_TOKEN
        self.fit = history_budget(int(profile.context_budget_tokens), window, system_tokens, tools_tokens)
        budget = self.fit.history_tokens
        rows, attachments, truncated = self.kept_rows(conversation_id, budget)
        self._pixels_from = _pixels_from(rows, profile, model or profile.chat_model)
        text = system_tokens + sum(_cost(m, {}) for m in rows)
        estimated = system_tokens + sum(_cost(m, attachments) for m in rows)
        self.window = ContextWindow(
            # Against the real window when it is known (the meter: how full it is), tools included.
            estimated_tokens=estimated + tools_tokens if window else estimated,
            budget_tokens=window or budget,
            first_message_id=rows[0].id if rows else None,
            truncated=truncated,
            text_tokens=text,
        )
        return [system, *self._history(rows, attachments)]

    def kept_rows(self, conversation_id: int, budget_tokens: int) -> tuple[list[Message], dict[int, list[str]], bool]:
        """The messages the next request holds (oldest first), their attachments, and whether older
        ones were left out: what ``build`` sends, without reading an image or building a request."""
        rows, attachments = self._recent(conversation_id, budget_tokens)
        kept = _within_budget(rows, attachments, budget_tokens)
        truncated = bool(kept) and (len(kept) < len(rows) or len(rows) >= self.max_messages)
        return kept, attachments, truncated

    def window_start(self, conversation_id: int, budget_tokens: int) -> int | None:
        """The oldest message the next request would hold when older ones are left out, else None
        (where the chat log's window marker goes for a conversation just opened)."""
        kept, _, truncated = self.kept_rows(conversation_id, budget_tokens)
        return kept[0].id if truncated else None

    def _recent(self, conversation_id: int, budget_tokens: int) -> tuple[list[Message], dict[int, list[str]]]:
        """The newest messages that could go in the request, oldest first, and their pictures: the
        rows of the active branch until their text alone exceeds the budget (at most
        ``max_messages``), read in one round trip (store/context_page.py), or read already with the
        user's message for a budget at least this one's (more rows than this budget can use change
        nothing: :func:`_within_budget` never keeps the oldest of rows that exceed it). A long
        conversation's request once read its whole window of 400 rows on every turn to keep the ~20
        that fit, then read in growing steps of 64 rows, a round trip each."""
        prefetched, self._prefetched = self._prefetched, None
        if prefetched is not None and prefetched[0] == conversation_id and prefetched[1] >= budget_tokens:
            read, attachments = prefetched[2], prefetched[3]
        else:
            statements = context_page.statements(conversation_id, self.max_messages, budget_tokens)
            found, pictures = batch.together(Message._meta.database, statements[:2])
            read = found.named()
            attachments = {}
            for message_id, path in pictures.rows:
                attachments.setdefault(message_id, []).append(path)
        rows = [
            m
            for m in read
            if m.role not in EXCLUDED_ROLES
            and m.status not in EXCLUDED_STATUSES
            and not (m.status == "streaming" and not m.content)
        ]
        return rows, attachments

    def _history(self, rows: Sequence[Message], attachments: dict[int, list[str]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        pending_calls: list[str] = []
        tool_images: list[tuple[str, list[str], bool]] = []
        for message in rows:
            is_tool = message.tool_call_id is not None and message.role != "assistant"
            if not is_tool:
                self._close_tool_block(out, pending_calls, tool_images)
            if message.role == "user":
                out.append(
                    {
                        "role": "user",
                        "content": self._user_content(
                            message.content, attachments.get(message.id, []), message.id >= self._pixels_from
                        ),
                    }
                )
            elif message.role == "assistant":
                entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
                calls = stored_calls(message)
                if calls:
                    entry["tool_calls"] = [
                        {
                            **(c.get("extra") or {}),  # provider fields that must round-trip, unchanged
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"] or "{}"},
                        }
                        for c in calls
                    ]
                    pending_calls = [c["id"] for c in calls]
                elif not message.content:
                    continue
                out.append(entry)
            elif is_tool:
                if message.tool_call_id not in pending_calls:
                    continue  # its assistant message fell outside the window
                pending_calls.remove(message.tool_call_id)
                out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
                if attachments.get(message.id):
                    pixels = message.id >= self._pixels_from
                    tool_images.append((message.tool_name or message.role, attachments[message.id], pixels))
        self._close_tool_block(out, pending_calls, tool_images)
        return out

    def _close_tool_block(
        self, out: list[dict[str, Any]], pending: list[str], images: list[tuple[str, list[str], bool]]
    ) -> None:
        # A call without a stored result (process killed mid-tool) still needs an answer for the API.
        for call_id in pending:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": json.dumps({"status": "error", "error": "interrupted: no result was recorded"}),
                }
            )
        pending.clear()
        if images:
            # Strict servers (Mistral) reject a user turn right after tool results: a short assistant
            # turn goes between, so the images still come right after the tool turn on every server.
            out.append({"role": "assistant", "content": IMAGES_FOLLOW})
        for tool_name, paths, pixels in images:
            # The images a tool produced follow its result, in order, so the model sees what was made.
            parts: list[dict[str, Any]] = [{"type": "text", "text": f"Image(s) produced by {tool_name}:"}]
            parts.extend(self._image_part(path) if pixels else _image_note(path) for path in paths)
            out.append({"role": "user", "content": parts})
        images.clear()

    def _user_content(self, text: str, paths: list[str], pixels: bool = True) -> str | list[dict[str, Any]]:
        if not paths:
            return text
        if not pixels:
            return "\n".join([text, *(_image_note(path)["text"] for path in paths)]).strip()
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "text", "text": text})
        parts.extend(self._image_part(path) for path in paths)
        return parts

    def _image_part(self, relative: str) -> dict[str, Any]:
        path = self.vault.root / relative
        if not _inside_media(self.vault, path):  # a stored row (an old import) names another file
            log.warning("attachment %r is not under media/: left out of the request", relative)
            return {"type": "text", "text": f"[image not available: {relative}]"}
        mime = "image/jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "image/png"
        if path.suffix.lower() in (".gif", ".webp"):
            mime = "image/" + path.suffix.lower().lstrip(".")
        try:
            path = media_files.local_file(self.vault.root, relative)  # made on another machine: fetched
            url = image_cache.data_url(path, mime)  # read and encoded once per file version
        except OSError as exc:
            if not isinstance(exc, media_files.MediaUnavailable) or not exc.missing:
                log.warning("attachment %r left out of the request: %s", relative, exc)
            return {"type": "text", "text": f"[image no longer available: {relative}]"}
        return {"type": "image_url", "image_url": {"url": url}}


def _inside_media(vault: Vault, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(vault.media.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def _image_note(relative: str) -> dict[str, Any]:
    # Only what is true in every request: it may never have been sent (/show to a text-only model).
    return {"type": "text", "text": f"[image: {relative} (image data not sent with this request)]"}


def _pixels_from(rows: Sequence[Message], profile: Profile, model: str) -> float:
    """Images of messages with an id from this one on go as pixels; earlier ones as short notes.

    A chat model that takes images sees them all. Otherwise only a request to a model that takes
    images (the vision follow-up) carries pixels, and only those of the current turn (from the
    latest user message on): a text-only chat model rejects image parts.
    """
    if accepts_images(profile, profile.chat_model):
        return 0
    if not accepts_images(profile, model):
        return math.inf
    users = [m.id for m in rows if m.role == "user"]
    return users[-1] if users else 0


def _cost(message: Message, attachments: dict[int, list[str]]) -> int:
    """Estimated tokens of one message (about 4 characters a token, 1,000 an image)."""
    cost = len(message.content) // CHARS_PER_TOKEN + len(message.tool_calls or "") // CHARS_PER_TOKEN + 4
    return cost + IMAGE_TOKENS * len(attachments.get(message.id, []))


def _within_budget(rows: list[Message], attachments: dict[int, list[str]], budget_tokens: int) -> list[Message]:
    """Keep the newest messages that fit the budget, tool exchanges whole.

    Always kept, whatever they cost: the latest user message and the last exchange (the open tool
    exchange: an assistant message with tool calls and its results), so a huge message can never
    leave the model with nothing but the system prompt.
    """
    units = _units(rows)
    if not units:
        return []
    users = [i for i, unit in enumerate(units) if unit[0].role == "user"]
    kept = {len(units) - 1, *users[-1:]}
    used = sum(_unit_cost(units[i], attachments) for i in kept)
    for index in range(len(units) - 1, -1, -1):
        if index in kept:
            continue
        cost = _unit_cost(units[index], attachments)
        if used + cost > budget_tokens:
            break
        kept.add(index)
        used += cost
    return [message for index, unit in enumerate(units) if index in kept for message in unit]


def _units(rows: list[Message]) -> list[list[Message]]:
    """Rows grouped so an assistant message with tool calls and the results after it stay together."""
    units: list[list[Message]] = []
    for message in rows:
        is_tool = message.tool_call_id is not None and message.role != "assistant"
        if is_tool and units and units[-1][0].role == "assistant" and units[-1][0].tool_calls:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _unit_cost(unit: list[Message], attachments: dict[int, list[str]]) -> int:
    return sum(_cost(message, attachments) for message in unit)
