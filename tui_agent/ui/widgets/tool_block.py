"""Tool results as collapsible blocks: ``Tool result · <tool>`` and its status (the one-line reason
when it failed); the body holds the command and the raw output. A failed tool also gets a red card
with the reason in words, outside the collapsed block; a warning shows next to the images."""

from __future__ import annotations

import json
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.tool_failures import Outcome, card_text, outcome, title
from tui_agent.ui.widgets.bubbles import ErrorCard
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.spinner import Spinner


def _pretty(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return raw


class ToolBlock(Collapsible):
    """Collapsed by default; focus it and press Enter to toggle."""

    def __init__(
        self,
        name: str,
        arguments: str,
        output: str,
        status: str,
        *,
        message_id: int | None = None,
        result: Outcome | None = None,
    ) -> None:
        from rich.syntax import Syntax  # pygments: only when a tool block is shown

        result = result or outcome(output)
        super().__init__(
            Static("command", classes="tool-label"),
            Static(
                Syntax(visible(f"{name} {arguments}"), "text", word_wrap=True, theme="ansi_dark"),
                classes="tool-command",
            ),
            Static("output", classes="tool-label"),
            Static(Syntax(visible(_pretty(output)), "json", word_wrap=True, theme="ansi_dark"), classes="tool-output"),
            title=title(name, result),
            collapsed=True,
            classes=f"tool-block -{'ok' if status == 'ok' else 'error'}",
        )
        self.tool_name = name
        self.tool_status = status
        self.message_id = message_id


class ToolResultView(Vertical):
    """A tool's bubble: the red card when it failed, the images and their warning, then the block."""

    DEFAULT_CSS = """
    ToolResultView .tool-warning { color: $warning; padding: 0 1; }
    ToolResultView .tool-error { margin: 0; }
    """

    def __init__(
        self, name: str, arguments: str, output: str, status: str, images: list[Path], *, message_id: int | None = None
    ) -> None:
        super().__init__(classes="bubble tool")
        self.result = outcome(output)
        self.block = ToolBlock(name, arguments, output, status, message_id=message_id, result=self.result)
        self.images = images
        self.message_id = message_id
        self.text = f"{name} {arguments}\n\n{_pretty(output)}"

    def compose(self) -> ComposeResult:
        result = self.result
        if result.status not in ("ok", "cancelled") and result.error:
            card = ErrorCard(card_text(self.block.tool_name, result.error))
            card.add_class("tool-error")
            yield card
        if self.images:
            yield ImageCarousel(self.images)
        if result.warning:
            yield Static(f"⚠ {visible(result.warning)}", classes="tool-warning", markup=False)
        yield self.block

    def on_mount(self) -> None:
        if self.images:
            # The pictures are what the keyboard comes for: Shift+Tab from the composer lands on the
            # carousel (shown focused), not first on this block's title below it. The block still
            # opens with a click, Ctrl+O (every tool block) or the message cursor's actions.
            for block_title in self.block.query("CollapsibleTitle"):
                block_title.can_focus = False


class ToolProgress(Vertical):
    """Shown while a tool runs: spinner, tool name, elapsed seconds."""

    def __init__(self, call_id: str, summary: str) -> None:
        super().__init__(classes="bubble tool-progress")
        self.call_id = call_id
        self.summary = summary

    def compose(self) -> ComposeResult:
        yield Spinner(f"running {visible(self.summary)}")
