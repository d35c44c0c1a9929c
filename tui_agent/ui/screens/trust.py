"""The start-up question for a vault that came with the current folder: trust it, or not now.

Until trusted, the vault runs no program (MCP servers, the image command) and its profile's API key
variable is never read (``core.trust``). Keys typed ahead, or pressed in the first ``ARM_DELAY_S``
seconds, are swallowed (someone typing a first message must not answer by accident); "Not now"
has the focus.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Label, Static

from tui_agent.core.textsafe import visible


class TrustScreen(ModalScreen[bool]):
    """Returns True to trust the vault (remembered), False for "not now" (this run only)."""

    ARM_DELAY_S = 0.5
    BINDINGS = [
        Binding("t", "choose(True)", "Trust it", id="trust.yes"),
        Binding("n,escape", "choose(False)", "Not now", id="trust.no"),
    ]
    DEFAULT_CSS = """
    TrustScreen .dialog { border: thick $warning; }
    TrustScreen .dialog-body { height: auto; max-height: 16; }
    """
    armed: reactive[bool] = reactive(False)

    def __init__(self, vault: str, would: list[str]) -> None:
        super().__init__()
        self.vault = vault
        self.would = would
        self._arm_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        things = "\n".join(f"  • {line}" for line in self.would) or "  • (nothing is configured yet)"
        text = (
            f"{self.vault}\n\nThis vault came with the folder you started in (a cloned project can ship one). "
            "You can read and use it, but until you trust it, it runs no program and gets no API key. "
            f"Trusted, it would:\n{things}\n\nTrust is remembered for this folder (tui-agent vault untrust "
            "takes it back)."
        )
        with Vertical(classes="dialog"):
            yield Label("Trust this vault?", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(visible(text), id="trust-text", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Trust it (t)", id="trust", variant="warning", disabled=True)
                yield Button("Not now (n)", id="not-now", variant="primary", disabled=True)

    def on_mount(self) -> None:
        self._disarm()

    def _disarm(self) -> None:
        self.armed = False
        if self._arm_timer is not None:
            self._arm_timer.stop()
        self._arm_timer = self.set_timer(self.ARM_DELAY_S, self.arm)

    def arm(self) -> None:
        self.armed = True

    def watch_armed(self, armed: bool) -> None:
        for button in self.query(Button):
            button.disabled = not armed
        if armed:
            self.query_one("#not-now", Button).focus()

    def on_key(self, event: events.Key) -> None:
        if not self.armed:  # typed ahead or too soon: swallow it and wait again
            event.stop()
            event.prevent_default()
            self._disarm()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.armed if action == "choose" else True

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id == "trust")

    def action_choose(self, trusted: bool) -> None:
        if self.armed:
            self.dismiss(trusted)
