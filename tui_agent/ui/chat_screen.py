"""The main screen. Whenever it comes back (a modal, the palette or the log screen closed) the
composer has focus, never a hidden field of a closed panel (or the chat log, when the user was
moving the message cursor there)."""

from __future__ import annotations

from textual.screen import Screen


class ChatScreen(Screen[None]):
    # The composer takes focus first. (Textual's default focuses the first focusable widget, the
    # chat log; moving focus away from it then restyles the whole log, which costs the first paint.)
    AUTO_FOCUS = "#composer"

    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.focus_composer)

    def focus_composer(self) -> None:
        for log in self.query("#chat-log"):
            if getattr(log, "cursor", None) is not None:
                log.focus()  # back from the message's actions: the message cursor stays where it was
                return
        for composer in self.query("#composer"):
            composer.focus()
