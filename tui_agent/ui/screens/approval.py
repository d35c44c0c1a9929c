"""The approval modal: a tool asks to change the user's data; only a deliberate answer counts.

Keys typed ahead (still queued when the modal opens) and keys pressed in its first
``ARM_DELAY_S`` seconds are swallowed; each such key restarts the wait, so someone typing into
the composer cannot answer by accident. Until then the buttons are disabled. "Always" asks once
more before it turns approval off for the session. The question is the tool's computed text
(counts and a preview, or an MCP call's every argument), shown whole in a scrolling body, without
markup, with control, invisible and bidi characters shown as ``␛`` or ``<U+202E>``.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Button, Label, Static

from tui_agent.core.textsafe import revealed
from tui_agent.ui.screens.armed import ArmedModal

ALWAYS_QUESTION = (
    "Approve every {tool} change for the rest of this session, without asking again?\n\n"
    "Until you quit, the model may change your history without showing you first. "
    "Every previous text is still kept as a revision."
)


class ApprovalScreen(ArmedModal[str]):
    """Returns "yes", "no" or "always" (yes for the rest of this session)."""

    SAFE_BUTTON = "no"
    BINDINGS = [
        Binding("y", "choose('yes')", "Yes", id="approval.yes"),
        Binding("n,escape", "choose('no')", "No", id="approval.no"),
        Binding("a", "choose('always')", "Always this session", id="approval.always"),
    ]
    DEFAULT_CSS = """
    ApprovalScreen .dialog-body { height: auto; max-height: 22; }
    """

    #: True on the second step of "Always".
    confirming_always: reactive[bool] = reactive(False)

    def __init__(self, tool: str, question: str) -> None:
        super().__init__()
        self.tool = tool
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog approval"):
            yield Label(revealed(self._title()), id="approval-title", classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body"):
                yield Static(revealed(self.question), id="approval-question", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", id="yes", variant="warning", disabled=True)
                yield Button("No (n)", id="no", variant="primary", disabled=True)
                yield Button("Always this session (a)", id="always", disabled=True)

    def _title(self) -> str:
        if self.tool == "memory_sql":
            return f"Allow {self.tool} to change your history?"
        return f"Allow the tool {self.tool} to run?"  # MCP tools use the same modal

    def watch_confirming_always(self, confirming: bool) -> None:
        self.query_one("#approval-title", Label).update(
            revealed(f"Always allow {self.tool}?" if confirming else self._title())
        )
        self.query_one("#approval-question", Static).update(
            revealed(ALWAYS_QUESTION.format(tool=self.tool) if confirming else self.question)
        )
        self.query_one("#yes", Button).label = "Yes, always (y)" if confirming else "Yes (y)"
        self.query_one("#no", Button).label = "Back (n)" if confirming else "No (n)"
        self.query_one("#always", Button).display = not confirming

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "no")

    def action_choose(self, choice: str) -> None:
        if not self.armed:
            return
        if self.confirming_always:
            if choice == "yes":
                self.dismiss("always")
            elif choice == "no":
                self.confirming_always = False
                self._disarm()
            return
        if choice == "always":
            self.confirming_always = True
            self._disarm()
            return
        self.dismiss(choice)
