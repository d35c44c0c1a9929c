"""A live view of logs/agent.log (the [IMAGE TOOL] lines among them)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Header, Log

from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.key_footer import KeyFooter

TAIL_BYTES = 64_000


class LogScreen(Screen[None]):
    BINDINGS = [Binding("escape,ctrl+l", "app.pop_screen", "Back to chat", id="log.close")]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._offset = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Log(id="log-view", highlight=True, auto_scroll=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            size = 0
        self._offset = max(0, size - TAIL_BYTES)
        self._poll()
        self.set_interval(0.5, self._poll)

    def _poll(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return
        if data:
            self._offset += len(data)
            self.query_one(Log).write(visible(data.decode("utf-8", "replace")))
