"""Slash commands typed by the user, parsed once here for the TUI and ``tui-agent ask`` alike."""

from __future__ import annotations

import re
import time
from typing import Any, NamedTuple


class SlashError(ValueError):
    """A slash command is malformed; the message says how to write it."""


class SlashSpec(NamedTuple):  # NamedTuples and plain classes: a dataclass costs ~1 ms of exec at start
    name: str
    usage: str
    description: str


COMMANDS: list[SlashSpec] = [
    SlashSpec("imagine", "/imagine <prompt>", "generate image(s) with the image tool"),
    SlashSpec("generate-image", "/generate-image [n] <prompt>", "generate n images (1-4; default from the profile)"),
    SlashSpec(
        "edit", "/edit <media/path> <words>", "edit a picture of the vault, e.g. /edit media/fox.png make it bluer"
    ),
    SlashSpec("search", "/search <query>", "search the web"),
    SlashSpec("sql", "/sql <query>", "run one SELECT or UPDATE over the chat history (memory_sql)"),
    SlashSpec("show", "/show <path>", "show an image from the vault, e.g. media/food/pizza.png"),
    SlashSpec("attach", "/attach <path|url> [message]", "send an image (file or URL) with an optional message"),
    SlashSpec("new", "/new", "start a new conversation"),
    SlashSpec("help", "/help", "list commands and key bindings"),
]
_BY_NAME = {spec.name: spec for spec in COMMANDS}
HELP, NEW = "help", "new"  # answered at once, nothing sent: the TUI shows its help / new chat, the loop and `ask` too


class SlashCommand:
    def __init__(
        self,
        name: str,
        tool: str | None = None,
        arguments: dict[str, Any] | None = None,
        attach: str | None = None,
        text: str = "",
    ) -> None:
        self.name = name
        self.tool = tool
        self.arguments: dict[str, Any] = {} if arguments is None else arguments
        self.attach = attach
        self.text = text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SlashCommand):
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "SlashCommand(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


def is_command(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith("/") and not stripped.startswith("//")


def literal(text: str) -> str:
    """A plain message as sent: a leading ``//`` stands for a literal ``/``."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text


def parse(text: str) -> SlashCommand | None:
    """Return the command in ``text``, or None for a plain message. ``//x`` sends ``/x`` literally."""
    if not is_command(text):
        return None
    head, _, rest = text.strip()[1:].partition(" ")
    name = head.strip().lower()
    rest = rest.strip()
    spec = _BY_NAME.get(name)
    if spec is None:
        raise SlashError(f"unknown command /{name}; /help lists the commands (start with // to send a literal /)")
    if name in (NEW, HELP):
        return SlashCommand(name)
    if not rest:
        raise SlashError(f"usage: {spec.usage}")
    if name == "imagine":
        return SlashCommand(name, "generate_image", _image_args(rest, None))
    if name == "generate-image":
        count_text, _, prompt = rest.partition(" ")
        if count_text.isdigit():
            if not prompt.strip():
                raise SlashError(f"usage: {spec.usage}")
            return SlashCommand(name, "generate_image", _image_args(prompt.strip(), int(count_text)))
        return SlashCommand(name, "generate_image", _image_args(rest, None))
    if name == "edit":
        source, _, prompt = rest.partition(" ")
        if not prompt.strip():
            raise SlashError(f"usage: {spec.usage} (say what to change after the picture's path)")
        return SlashCommand(name, "edit_image", _edit_args(source, prompt.strip()))
    if name == "search":
        return SlashCommand(name, "web_search", {"query": rest})
    if name == "sql":
        return SlashCommand(name, "memory_sql", {"query": rest})
    if name == "show":
        return SlashCommand(name, "show_image", {"path": rest})
    target, _, message = rest.partition(" ")
    return SlashCommand(name, attach=target, text=message.strip())


def _image_args(prompt: str, count: int | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "prompt": prompt,
        "path": f"imagine/{slug(prompt)}-{time.strftime('%Y%m%d-%H%M%S')}.png",
        "reason": "the user asked with a slash command",
    }
    if count is not None:
        arguments["count"] = count
    return arguments


def edit_command(source: str) -> str:
    """What "edit this picture" puts in the composer: the command and the picture, then the words."""
    return f"/edit {source} "


def _edit_args(source: str, prompt: str) -> dict[str, Any]:
    # The new picture goes to edits/, named for the source and the words: never over the source.
    stem = source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return {
        "image": source,
        "prompt": prompt,
        "path": f"edits/{slug(stem, 30)}-{slug(prompt, 30)}-{time.strftime('%Y%m%d-%H%M%S')}.png",
        "reason": "the user asked with a slash command",
    }


def slug(text: str, limit: int = 40) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:limit].rstrip("-") or "image"


def help_text() -> str:
    width = max(len(spec.usage) for spec in COMMANDS)
    return "\n".join(f"{spec.usage.ljust(width)}  {spec.description}" for spec in COMMANDS)
