"""A small spinner with elapsed seconds, frozen when the app does not animate (snapshots)."""

from __future__ import annotations

from textual.widgets import Static

from tui_agent.ui.widgets.host import host_of

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner(Static):
    DEFAULT_CSS = """
    Spinner { width: auto; height: 1; color: $accent; }
    """

    def __init__(self, label: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self.label = label
        self._frame = 0
        self._started = 0.0

    def on_mount(self) -> None:
        self._started = host_of(self.app).clock()
        self._tick()
        if host_of(self.app).live_motion:
            self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(FRAMES)
        host = host_of(self.app)
        elapsed = host.clock() - self._started
        frame = FRAMES[self._frame] if host.live_motion else FRAMES[0]
        self.update(f"{frame} {self.label} · {elapsed:.0f}s")
