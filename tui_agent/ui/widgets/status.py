"""The status line: what is happening now, in the conversation on screen.

States: connecting (checking the endpoint), ready, offline (no endpoint answers), waiting (a request
is out, no token yet: seconds so far), streaming (tokens and tokens/s), tool (running a tool:
seconds), done (time and tokens), error. Timed states tick twice a second while the app animates.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.visual import VisualType
from textual.widgets import Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.host import host_of

STATES = ("idle", "connecting", "offline", "busy", "vision", "error")
TICK_S = 0.5


class StatusLine(Static):
    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(text, id=id, markup=False)
        self.state = "idle"
        self._live: Callable[[], str] | None = None

    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        """A new text repaints the line; the screen is not laid out again for it (the line is one
        row as wide as the row leaves it, whatever it says). Streaming updates it once a frame."""
        super().update(content, layout=layout)

    def on_mount(self) -> None:
        if host_of(self.app).live_motion:
            self.set_interval(TICK_S, self._tick)

    def _tick(self) -> None:
        if self._live is not None:
            self.update(visible(self._live()))

    def _now(self) -> float:
        return float(host_of(self.app).clock())

    def show(self, text: str, *, state: str = "idle") -> None:
        self._live = None
        self._set(state)
        self.update(visible(text))

    def _show_live(self, render: Callable[[], str], *, state: str) -> None:
        self._set(state)
        self._live = render
        self.update(visible(render()))

    def _set(self, state: str) -> None:
        self.state = state
        css = {"connecting": "busy", "offline": "error"}.get(state, state)
        for name in ("idle", "busy", "vision", "error"):
            self.set_class(name == css, f"-{name}")

    def _elapsed(self, started: float) -> str:
        return f"{max(0.0, self._now() - started):.1f}s"

    # --------------------------------------------------------------- states
    def connecting(self, base_url: str) -> None:
        self.show(f"connecting to {base_url}…", state="connecting")

    def ready(self, model: str) -> None:
        self.show(f"{model} · ready")

    def offline(self, base_url: str) -> None:
        self.show(f"offline · no model answers at {base_url} (Ctrl+B to change base_url)", state="offline")

    def model_switched(self, model: str, reason: str) -> None:
        self.show(f"⇄ {model} ({reason})", state="vision" if "image" in reason else "busy")

    def waiting(self, model: str, started: float) -> None:
        """A request is out and no token has come back yet."""
        state = "vision" if self.state == "vision" else "busy"
        self._show_live(lambda: f"{model} · waiting for the first token · {self._elapsed(started)}", state=state)

    def thinking(self, model: str, started: float) -> None:
        """The model's reasoning streams (its Thinking block), and no word of its answer yet."""
        state = "vision" if self.state == "vision" else "busy"
        self._show_live(lambda: f"{model} · thinking · {self._elapsed(started)}", state=state)

    def streaming(self, model: str, tokens: int, first_token_at: float) -> None:
        seconds = self._now() - first_token_at
        rate = f" · {tokens / seconds:.0f} tokens/s" if seconds > 0 else ""
        state = "vision" if self.state == "vision" else "busy"
        self._set(state)
        self._live = None
        self.update(visible(f"{model} · streaming · {tokens} tokens{rate}"))

    def tool_running(self, name: str, started: float | None = None) -> None:
        begun = self._now() if started is None else started
        self._show_live(lambda: f"running {name}… · {self._elapsed(begun)}", state="busy")

    def awaiting_approval(self, name: str) -> None:
        """A tool asks before it acts: nothing runs until the user answers."""
        self.show(f"{name} · waiting for your approval", state="busy")

    def finished(self, model: str, started: float, prompt: int | None, completion: int | None) -> None:
        tokens = f" · {prompt} in / {completion} out tokens" if prompt is not None else ""
        self.show(f"{model} · done in {self._elapsed(started)}{tokens}")

    def failed(self, reason: str, started: float | None = None, *, retryable: bool = True) -> None:
        took = f" · {self._elapsed(started)}" if started is not None else ""
        self.show(f"error · {reason}{took}" + (" (Ctrl+R retries)" if retryable else ""), state="error")

    def done(self, status: str, started: float) -> None:
        if status == "cancelled":
            self.show(f"cancelled · {self._elapsed(started)}", state="error")
        elif status != "complete" and self.state != "error":
            self.failed(status.replace("_", " "), started)
