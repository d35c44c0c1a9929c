""" "Changed on another machine: approve?": the settings of the shared store that this machine has not
approved (core.approvals), each shown whole. Until approved they do nothing here: no MCP server
starts, no key goes to a changed endpoint, the image command does not run. Like the vault-trust
dialog, keys typed ahead are swallowed and "Not now" has the focus."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from tui_agent.core.textsafe import revealed
from tui_agent.ui.screens.armed import ArmedModal


class SettingsApprovalScreen(ArmedModal[bool]):
    """Returns True to approve every listed value on this machine, False for "not now"."""

    SAFE_BUTTON = "not-now"
    BINDINGS = [
        Binding("a", "choose(True)", "Approve", id="settings_approval.yes"),
        Binding("n,escape", "choose(False)", "Not now", id="settings_approval.no"),
    ]
    DEFAULT_CSS = """
    SettingsApprovalScreen .dialog { border: thick $warning; }
    SettingsApprovalScreen .dialog-body { height: auto; max-height: 16; }
    """

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        things = "\n".join(f"  • {line}" for line in self.lines)
        text = (
            "These settings were changed in the shared store (maybe on another machine) and are not approved on "
            "this one. Until you approve them they do nothing here. Approved, this machine would:\n"
            f"{things}\n\nThe approval is kept on this machine only, for these exact values."
        )
        with Vertical(classes="dialog"):
            yield Label("Changed on another machine: approve?", classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(revealed(text), id="settings-approval-text", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Approve (a)", id="approve", variant="warning", disabled=True)
                yield Button("Not now (n)", id="not-now", variant="primary", disabled=True)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id == "approve")

    def action_choose(self, approve: bool) -> None:
        if self.armed:
            self.dismiss(approve)
