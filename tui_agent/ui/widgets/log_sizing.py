"""How many of a conversation's newest messages surely fill the chat log's view: the first page
mounts only those (the rest of the page comes after the first paint)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui_agent.ui.reply_preview import preview

if TYPE_CHECKING:
    from tui_agent.core.store.models import Message

# Columns a bubble's text cannot use (app.tcss): the log's padding and scroll bar, the bubble's
# border and padding; a user's bubble is also indented.
BUBBLE_CHROME = 6
USER_INDENT = 8


def rows_filling(rows: list[Message], width: int, wanted: int) -> int:
    """How many of the newest ``rows`` take at least ``wanted`` lines at ``width``.

    Each message counts as few lines as it can take: the line above it, and its text wrapped
    character by character at the bubble's inner width (words only make it taller); a reply
    that Markdown may shorten (links, markup) counts one line. Images and tool blocks only add."""
    filled = 0
    for count, message in enumerate(reversed(rows), start=1):
        filled += 1 + least_lines(message, width)
        if filled >= wanted:
            return max(count, 2)
    return len(rows)


def least_lines(message: Message, width: int) -> int:
    text = message.content or ""
    if message.role == "user":
        inner = width - BUBBLE_CHROME - USER_INDENT
    elif message.role == "assistant":
        shown, exact = preview(text)
        if not exact:
            return 1
        text, inner = shown.plain, width - BUBBLE_CHROME
    else:
        return 1
    inner = max(10, inner)
    return sum(max(1, -(-len(line) // inner)) for line in text.split("\n"))
