"""The model's reasoning above its reply: a collapsible "Thinking" block.

It streams open while the model thinks (with elapsed seconds), collapses when the answer
starts, and reopened conversations show it collapsed, under the same label (the seconds are not
stored: a label that changed on reload said two things of one block). One key shows or hides every
block.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.widgets import Collapsible, Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.host import PLAIN, host_of

TITLE = "Thinking"  # a finished block's label, live or reloaded


class ThinkingBlock(Collapsible):
    """Reasoning text; ``live`` blocks stream and count seconds until :meth:`finish`."""

    DEFAULT_CSS = """
    ThinkingBlock { margin: 0 0 1 0; padding: 0; border-top: none; background: transparent; }
    ThinkingBlock CollapsibleTitle { color: $text-muted; padding: 0; }
    ThinkingBlock > Contents { padding: 0 0 0 2; }
    ThinkingBlock .thinking-text { color: $text-muted; text-style: italic; }
    """

    def __init__(self, text: str = "", *, live: bool = False) -> None:
        self.text = text
        self.live = live
        self.body = Static(visible(text), classes="thinking-text", markup=False)
        super().__init__(self.body, title=TITLE, collapsed=not live, classes="thinking-block")
        self._started = 0.0
        self._elapsed: float | None = None
        self._timer: Any = None

    def on_mount(self) -> None:
        host = host_of(self.app)
        self.display = not host.thinking_hidden
        if self.live:
            self._started = self._clock()
            self._tick()
            if host.live_motion:
                self._timer = self.set_interval(1.0, self._tick)

    def _clock(self) -> float:
        return float(host_of(self.app).clock())

    def _tick(self) -> None:
        elapsed = self._clock() - self._started
        self.title = f"Thinking… {elapsed:.0f}s"

    def append(self, text: str) -> None:
        if not text:
            return
        self.text += text
        self.body.update(visible(self.text.strip()))

    def replace(self, text: str) -> None:
        self.text = text
        self.body.update(visible(self.text.strip()))

    def finish(self) -> None:
        """The answer started (or the reply ended): collapse, under the label a reload shows."""
        if not self.live:
            return
        self.live = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._elapsed = self._clock() - self._started
        self.title = TITLE
        self.collapsed = True


def toggle_all(app: App[Any]) -> bool:
    """Show or hide every thinking block (and those still to come); returns True when shown."""
    host = host_of(app)
    hidden = not host.thinking_hidden
    if host is not PLAIN:  # blocks still to come read it from the app
        host.thinking_hidden = hidden
    for block in app.query(ThinkingBlock):
        block.display = not hidden
    return not hidden
