"""A dialog that only a deliberate answer can close: keys typed ahead (still queued when it opens)
and keys pressed in its first ``ARM_DELAY_S`` seconds are swallowed, each restarting the wait, and
its buttons stay disabled until then, so someone typing into the composer cannot answer it by
accident. When it arms, the safe answer (``SAFE_BUTTON``) has the focus. Used by the approval and
the vault-trust dialogs."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual import events
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button

ResultT = TypeVar("ResultT")


class ArmedModal(ModalScreen[ResultT]):
    ARM_DELAY_S: ClassVar[float] = 0.5
    #: The id of the button focused when the dialog arms (the answer that changes nothing).
    SAFE_BUTTON: ClassVar[str] = ""

    #: False while keys and buttons are inert (just opened, or just switched to another step).
    armed: reactive[bool] = reactive(False)

    def __init__(self) -> None:
        super().__init__()
        self._arm_timer: Timer | None = None

    def on_mount(self) -> None:
        self._disarm()

    def _disarm(self) -> None:
        self.armed = False
        if self._arm_timer is not None:
            self._arm_timer.stop()
        self._arm_timer = self.set_timer(self.ARM_DELAY_S, self.arm)

    def arm(self) -> None:
        """Make the answers live (called by the timer once no key came for ``ARM_DELAY_S``)."""
        self.armed = True

    def watch_armed(self, armed: bool) -> None:
        for button in self.query(Button):
            button.disabled = not armed
        if armed and self.SAFE_BUTTON:
            self.query_one(f"#{self.SAFE_BUTTON}", Button).focus()

    def on_key(self, event: events.Key) -> None:
        if not self.armed:  # typed ahead or too soon: swallow it and wait again
            event.stop()
            event.prevent_default()
            self._disarm()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.armed if action == "choose" else True
