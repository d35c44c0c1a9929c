"""The main screen. Whenever it comes back (a modal, the palette or the log screen closed) the
composer has focus, never a hidden field of a closed panel."""

from __future__ import annotations

from textual.screen import Screen


class ChatScreen(Screen[None]):
    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.focus_composer)

    def focus_composer(self) -> None:
        for composer in self.query("#composer"):
            composer.focus()
