"""Why a tool failed, in words for the user: a title and what to do, from the tool's error text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tui_agent.core.textsafe import visible

TITLE_CHARS = 80


@dataclass(frozen=True)
class Outcome:
    """What a stored tool result says: status, error text, a warning (``data.warning``), a source."""

    status: str
    error: str = ""
    warning: str = ""
    source: str = ""  # the picture an edit started from (``data.source``: ``media/...`` only)


def outcome(output: str) -> Outcome:
    try:
        value: Any = json.loads(output)
    except (json.JSONDecodeError, TypeError):
        return Outcome("error", "the tool's result is not valid JSON")
    if not isinstance(value, dict):
        return Outcome("error", "the tool's result is not a JSON object")
    status = str(value.get("status", "error"))
    data = value.get("data")
    warning = str(data.get("warning", "")) if isinstance(data, dict) else ""
    source = data.get("source", "") if isinstance(data, dict) else ""
    if not isinstance(source, str) or not source.startswith("media/") or any(s in source for s in ("..", "\\", "\x00")):
        source = ""  # a tool's words, not a path to follow out of media/
    return Outcome(status, str(value.get("error", "")) if status != "ok" else "", warning, source)


# (text in the error, title, what to do): the first match wins.
_REASONS: list[tuple[str, str, str]] = [
    ("cancelled by the user", "Cancelled", "You stopped this tool; send the message again to retry (Ctrl+R)."),
    ("declined", "You declined this change", "Nothing was changed."),
    ("not run:", "Not run", "The model kept calling tools; ask again, or raise max_tool_rounds (Ctrl+B)."),
    ("timed out", "It took too long", "Try again, or raise image_timeout_s in the sidebar (Ctrl+B)."),
    ("exists:", "That file already exists", "Nothing was overwritten. Ask again: the model picks another name."),
    ("not a valid PNG", "The generator did not make a PNG", "Check image_command: it must write a PNG to {output}."),
    (
        "cannot edit",
        "This image backend cannot edit pictures",
        "Set image_backend openai with a server that edits (OpenAI gpt-image-1), or put {input} in image_command.",
    ),
    ("cannot use a mask", "This image command takes no mask", "Put {mask} in image_command, or edit without one."),
    ("not found: media/", "That picture is not in the vault", "The model sees which one; pick a picture shown above."),
    (
        " not found",
        "The image generator is not installed",
        "Install flux2, or set image_command or image_backend in the sidebar (docs/getting-started.md).",
    ),
    ("images API", "The images API failed", "Check image_base_url and image_model in the sidebar (Ctrl+B)."),
    ("SearXNG", "SearXNG did not answer", "Check web_search_url and that SearXNG has format=json enabled."),
    ("web_search_url", "SearXNG has no URL", "Set web_search_url in the sidebar (Ctrl+B)."),
    ("invalid path", "The path was refused", "The model sees why and usually picks a valid path."),
    ("outside media", "The path was refused", "The model sees why and usually picks a valid path."),
    ("parameter", "The model called the tool wrongly", "The model sees this error and usually corrects the call."),
    ("invalid JSON", "The model called the tool wrongly", "The model sees this error and usually corrects the call."),
]


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    line = " ".join(visible(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def title(name: str, result: Outcome) -> str:
    if result.status == "ok":
        mark = "✓ ok" + (f" · ⚠ {one_line(result.warning, 40)}" if result.warning else "")
    else:
        mark = f"✗ {one_line(result.error or result.status)}"
    return f"Tool result · {visible(name)} · {mark}"


def card_text(name: str, error: str) -> str:
    """The red card under a failed tool: what failed, the tool's own words, what to do."""
    heading, hint = f"{name} failed", "Details are in the log (Ctrl+L); the model sees this error too."
    for needle, reason, advice in _REASONS:
        if needle in error:
            heading, hint = f"{name}: {reason}", advice
            break
    return f"✗ {heading}\n{error}\n{hint}"
