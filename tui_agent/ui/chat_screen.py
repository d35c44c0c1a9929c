"""The main screen. Whenever it comes back (a modal, the palette or the log screen closed) the
composer has focus, never a hidden field of a closed panel (or the chat log, when the user was
moving the message cursor there)."""

from __future__ import annotations

from textual.geometry import Size
from textual.screen import Screen


class ChatScreen(Screen[None]):
    # The composer takes focus first. (Textual's default focuses the first focusable widget, the
    # chat log; moving focus away from it then restyles the whole log, which costs the first paint.)
    AUTO_FOCUS = "#composer"
    _laid_out_at: Size | None = None  # the size of the last full layout

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        full = not (scroll and not self._layout_widgets)  # else Textual only reflows what scrolled into view
        super()._refresh_layout(size, scroll)
        if full:
            self._laid_out_at = self.outer_size if size is None else size

    def _screen_resized(self, size: Size) -> None:
        # Textual sends the screen a Resize after every layout that showed or resized it, and each
        # one laid every widget out again at the same size: three full layouts before the first
        # paint, each costlier with every message on screen. A real resize has a new size; any
        # change since the last layout asked for its own (the screen's next update does it).
        if size == self._laid_out_at:
            return
        super()._screen_resized(size)

    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.focus_composer)

    def focus_composer(self) -> None:
        for log in self.query("#chat-log"):
            if getattr(log, "cursor", None) is not None:
                log.focus()  # back from the message's actions: the message cursor stays where it was
                return
        for composer in self.query("#composer"):
            composer.focus()
