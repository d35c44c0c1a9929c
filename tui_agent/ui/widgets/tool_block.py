"""Tool results as collapsible blocks: ``Tool result · <tool>`` and its status; the body holds
the command and the raw output. Any tool renders this way; the image tool adds a carousel."""

from __future__ import annotations

import json
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.spinner import Spinner


def _pretty(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return raw


class ToolBlock(Collapsible):
    """Collapsed by default; focus it and press Enter to toggle."""

    def __init__(self, name: str, arguments: str, output: str, status: str, *, message_id: int | None = None) -> None:
        from rich.syntax import Syntax  # pygments: only when a tool block is shown

        mark = "✓" if status == "ok" else "✗"
        super().__init__(
            Static("command", classes="tool-label"),
            Static(Syntax(f"{name} {arguments}", "text", word_wrap=True, theme="ansi_dark"), classes="tool-command"),
            Static("output", classes="tool-label"),
            Static(Syntax(_pretty(output), "json", word_wrap=True, theme="ansi_dark"), classes="tool-output"),
            title=f"Tool result · {name} · {mark} {status}",
            collapsed=True,
            classes=f"tool-block -{'ok' if status == 'ok' else 'error'}",
        )
        self.tool_name = name
        self.tool_status = status
        self.message_id = message_id


class ToolResultView(Vertical):
    """A tool's bubble: a richer view when the tool made images, then the generic block."""

    def __init__(
        self, name: str, arguments: str, output: str, status: str, images: list[Path], *, message_id: int | None = None
    ) -> None:
        super().__init__(classes="bubble tool")
        self.block = ToolBlock(name, arguments, output, status, message_id=message_id)
        self.images = images
        self.message_id = message_id
        self.text = f"{name} {arguments}\n\n{_pretty(output)}"

    def compose(self) -> ComposeResult:
        if self.images:
            yield ImageCarousel(self.images)
        yield self.block


class ToolProgress(Vertical):
    """Shown while a tool runs: spinner, tool name, elapsed seconds."""

    def __init__(self, call_id: str, summary: str) -> None:
        super().__init__(classes="bubble tool-progress")
        self.call_id = call_id
        self.summary = summary

    def compose(self) -> ComposeResult:
        yield Spinner(f"running {self.summary}")
