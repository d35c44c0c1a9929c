"""What can be done with the message under the cursor: a small menu (Enter on a message)."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tui_agent.core.textsafe import visible


@dataclass(frozen=True)
class MessageAction:
    id: str  # the app action it runs, e.g. "copy_message" or "copy_code(2)"
    label: str
    key: str = ""


class MessageActionsScreen(ModalScreen[str | None]):
    """Returns the chosen action's id, or None."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close", id="message_actions.close")]

    def __init__(self, title: str, actions: list[MessageAction]) -> None:
        super().__init__()
        self.title_text = title
        self.actions = actions

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog message-actions"):
            yield Label(visible(self.title_text), classes="dialog-title", markup=False)
            yield OptionList(
                *[
                    # Labels can quote the message (a code block's language): shown as text only.
                    Option(Content(visible(f"{action.label}{f'  ({action.key})' if action.key else ''}")), id=action.id)
                    for action in self.actions
                ],
                id="message-action-list",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
