"""The status line: the model in use (and the switch to the vision model), elapsed time, tokens."""

from __future__ import annotations

from textual.widgets import Static


class StatusLine(Static):
    def show(self, text: str, *, state: str = "idle") -> None:
        for name in ("idle", "busy", "vision", "error"):
            self.set_class(name == state, f"-{name}")
        self.update(text)

    def _elapsed(self, started: float) -> str:
        return f"{self.app.clock() - started:.1f}s"  # type: ignore[attr-defined]

    def ready(self, model: str) -> None:
        self.show(f"{model} · ready")

    def model_switched(self, model: str, reason: str) -> None:
        self.show(f"⇄ {model} ({reason})", state="vision" if "image" in reason else "busy")

    def thinking(self, model: str, started: float) -> None:
        self.show(f"{model} · thinking… · {self._elapsed(started)}", state="busy")

    def tool_running(self, name: str) -> None:
        self.show(f"running {name}…", state="busy")

    def finished(self, model: str, started: float, prompt: int | None, completion: int | None) -> None:
        tokens = f" · {prompt} in / {completion} out tokens" if prompt is not None else ""
        self.show(f"{model} · {self._elapsed(started)}{tokens}")

    def done(self, status: str, started: float) -> None:
        if status != "complete":
            self.show(f"{status} · {self._elapsed(started)}", state="error")
