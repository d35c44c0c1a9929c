"""``◀ 2 / 3 ▶`` above a reply with alternatives (regenerate), ``branch ◀ 1 / 2 ▶`` above an edited
user message: choosing one makes that branch the one on screen and in the context."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Static


class AlternativesBar(Horizontal):
    DEFAULT_CSS = """
    AlternativesBar { height: 1; width: auto; }
    AlternativesBar Button.arrow { min-width: 3; width: 3; height: 1; margin: 0; border: none; }
    AlternativesBar .alt-counter { width: auto; padding: 0 1; color: $text-muted; }
    """

    class Chosen(Message):
        def __init__(self, message_id: int) -> None:
            super().__init__()
            self.message_id = message_id

    def __init__(self, ids: list[int], current: int, *, kind: str) -> None:
        super().__init__(classes=f"alternatives -{kind}")
        self.ids = ids
        self.current = current
        self.kind = kind

    @property
    def position(self) -> int:
        return self.ids.index(self.current)

    def label(self) -> str:
        prefix = "branch " if self.kind == "branch" else ""
        return f"{prefix}{self.position + 1} / {len(self.ids)}"

    def compose(self) -> ComposeResult:
        yield Button("◀", classes="arrow", id="alt-prev", compact=True)
        yield Static(self.label(), classes="alt-counter", markup=False)
        yield Button("▶", classes="arrow", id="alt-next", compact=True)

    def step(self, delta: int) -> None:
        target = self.ids[(self.position + delta) % len(self.ids)]
        if target != self.current:
            self.post_message(self.Chosen(target))

    @on(Button.Pressed, "#alt-prev")
    def _prev(self, event: Button.Pressed) -> None:
        event.stop()
        self.step(-1)

    @on(Button.Pressed, "#alt-next")
    def _next(self, event: Button.Pressed) -> None:
        event.stop()
        self.step(1)
