"""The model's reasoning above its reply: a collapsible "Thinking" block.

It streams open while the model thinks (with elapsed seconds), collapses when the answer
starts, and reopened conversations show it collapsed, under the same label (the seconds are not
stored: a label that changed on reload said two things of one block). One key shows or hides every
block.

A live block costs the same per write at the end of a long reasoning as at its start: only its last
lines are drawn again (the lines before them are moved, ``FREEZE_CHARS`` at a time, into text
widgets that are drawn once), and while the user types its writes go between the keys, as the
reply's do (``typing_pace``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from textual.app import App
from textual.widget import Widget
from textual.widgets import Collapsible, Static
from textual.worker import Worker

from tui_agent.core.textsafe import visible
from tui_agent.ui.typing_pace import pace_of
from tui_agent.ui.widgets.host import PLAIN, host_of

log = logging.getLogger("tui_agent.ui")
TITLE = "Thinking"  # a finished block's label, live or reloaded
#: A live block's last lines are moved into a text widget of their own once they are this long.
FREEZE_CHARS = 2_000


def split_done(text: str) -> tuple[str, str]:
    """``text`` (its start already stripped) as ``(done, rest)``: ``done`` is its whole lines that
    are followed by more than blank space (so stripping the end of the whole never reaches them),
    each drawn as it will always be; ``rest`` the lines after them."""
    cut = len(text.rstrip())
    end = text.rfind("\n", 0, cut)
    return (text[:end], text[end + 1 :]) if end > 0 else ("", text)


class ThinkingBlock(Collapsible):
    """Reasoning text; ``live`` blocks stream and count seconds until :meth:`finish`."""

    DEFAULT_CSS = """
    ThinkingBlock { margin: 0 0 1 0; padding: 0; border-top: none; background: transparent; }
    ThinkingBlock CollapsibleTitle { color: $text-muted; padding: 0; }
    ThinkingBlock > Contents { padding: 0 0 0 2; }
    ThinkingBlock .thinking-text { color: $text-muted; text-style: italic; }
    """

    def __init__(self, text: str = "", *, live: bool = False) -> None:
        self.text = text  # all the reasoning received, drawn or still waiting (while the user types)
        self.live = live
        self.body = Static(visible(text), classes="thinking-text", markup=False)  # a live block: its last lines
        super().__init__(self.body, title=TITLE, collapsed=not live, classes="thinking-block")
        self._started = 0.0
        self._elapsed: float | None = None
        self._timer: Any = None
        self._done = 0  # characters of the stripped text that are in frozen widgets above ``body``
        self._drawn = len(text)  # characters of ``text`` drawn
        self._written_at = float("-inf")
        self._writer: Worker[None] | None = None
        self._stop = asyncio.Event()

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
        """More reasoning: drawn at once, or right after the user's next key while they type."""
        if not text:
            return
        self.text += text
        if self._writer is None or self._writer.is_finished:
            # A worker of the block's: it ends with the block (removed with its conversation while it
            # waited for a key).
            self._writer = self.run_worker(self._write_soon(), group="thinking-writes", exit_on_error=False)

    async def _write_soon(self) -> None:
        pace = pace_of(self.app)
        await pace.turn(self._written_at, self._stop)
        self._written_at = pace.clock()
        try:
            self._draw()
        except Exception:  # the reasoning is stored by the turn all the same: the log says what failed
            log.exception("drawing the reasoning failed")

    async def replace(self, text: str) -> None:
        """All of the reasoning is ``text`` now (the reply's first words were reasoning after all)."""
        self.text = text
        self._done = 0
        await self.query(".thinking-done").remove()  # gone before the new lines are drawn: never twice
        self._draw()

    def shown(self) -> str:
        """The text on screen, frozen lines and last lines together."""
        parts = [str(w.render()) for w in self.query(".thinking-done")]
        return "\n".join([*parts, str(self.body.render())])

    def _draw(self) -> None:
        """What has arrived, on screen: the last lines drawn again, the lines before them frozen
        once they are ``FREEZE_CHARS`` long."""
        if not self.is_attached:
            return  # gone with its conversation: nothing to draw
        self._drawn = len(self.text)
        rest = self.text.lstrip()[self._done :]
        if len(rest) >= FREEZE_CHARS:
            done, rest_after = split_done(rest)
            parent = self.body.parent
            if done and isinstance(parent, Widget):
                parent.mount(
                    Static(visible(done), classes="thinking-text thinking-done", markup=False), before=self.body
                )
                self._done += len(done) + 1
                rest = rest_after
        self.body.update(visible(rest.rstrip()))

    def finish(self) -> None:
        """The answer started (or the reply ended): collapse, under the label a reload shows."""
        if not self.live:
            return
        self.live = False
        self._stop.set()  # a write waiting for a key goes now
        if self._drawn < len(self.text):
            self._draw()
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
