"""The start-up question for a vault that came with the current folder: trust it, or not now.

Until trusted, the vault runs no program (MCP servers, the image command) and its profile's API key
variable is never read (``core.trust``). Keys typed ahead, or pressed in the first ``ARM_DELAY_S``
seconds, are swallowed (someone typing a first message must not answer by accident); "Not now"
has the focus.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.screens.armed import ArmedModal


class TrustScreen(ArmedModal[bool]):
    """Returns True to trust the vault (remembered), False for "not now" (this run only)."""

    SAFE_BUTTON = "not-now"
    BINDINGS = [
        Binding("t", "choose(True)", "Trust it", id="trust.yes"),
        Binding("n,escape", "choose(False)", "Not now", id="trust.no"),
    ]
    DEFAULT_CSS = """
    TrustScreen .dialog { border: thick $warning; }
    TrustScreen .dialog-body { height: auto; max-height: 16; }
    """

    def __init__(self, vault: str, would: list[str]) -> None:
        super().__init__()
        self.vault = vault
        self.would = would

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

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id == "trust")

    def action_choose(self, trusted: bool) -> None:
        if self.armed:
            self.dismiss(trusted)
