"""A stored message as the widget the chat log shows for it (a bubble, an error card, a tool block)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widget import Widget

from tui_agent.core.store.models import Message
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, UserBubble


def result_status(content: str) -> str:
    try:
        return str(json.loads(content).get("status", "error"))
    except (json.JSONDecodeError, AttributeError):
        return "error"


def widget_for(
    vault_root: Path, message: Message, images: list[str], alternatives: list[int] | None = None
) -> Widget | None:
    """The widget for ``message`` (``images``: its attachments, relative to the vault), or ``None``
    for a message shown elsewhere (an assistant turn that is only a tool call: its block shows it)."""
    paths = [vault_root / p for p in images]
    alternatives = alternatives or []
    if message.role == "user":
        return UserBubble(message.content, paths, message_id=message.id, alternatives=alternatives)
    if message.role == "assistant":
        if not message.content and message.tool_calls:
            return None  # the call itself shows in the tool block
        status = "interrupted" if message.status == "streaming" else message.status
        return AssistantBubble(
            message.content,
            status=status,
            message_id=message.id,
            alternatives=alternatives,
            reasoning=message.reasoning or "",
            preview=True,
        )
    if message.role == "error":
        return ErrorCard(message.content, message_id=message.id)
    if message.tool_call_id is not None:
        return tool_widget(
            vault_root,
            message.tool_name or message.role,
            message.tool_arguments or "",
            message.content,
            paths,
            message.id,
        )
    return None


def tool_widget(
    vault_root: Path, name: str, arguments: str, output: str, paths: list[Path], message_id: int | None
) -> Widget:
    from tui_agent.ui.tool_failures import outcome
    from tui_agent.ui.widgets.tool_block import ToolResultView  # with the first tool result shown

    if name == "edit_image" and paths and (source := outcome(output).source):
        paths = [*paths, vault_root / source]  # the carousel's pages: the edit first, then its source
    return ToolResultView(name, arguments, output, result_status(output), paths, message_id=message_id)
