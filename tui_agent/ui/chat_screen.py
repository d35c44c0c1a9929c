"""The main screen. Whenever it comes back (a modal, the palette or the log screen closed) the
composer has focus, never a hidden field of a closed panel (or the chat log, when the user was
moving the message cursor there)."""

from __future__ import annotations

from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget


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

    _composer: Widget | None = None

    def draw_typed(self, composer: Widget) -> None:
        """A key just changed the composer (and not its size): it is drawn now, where the last
        layout put it, not after the screen's next update (a few turns of the event loop later,
        each behind whatever else waits, while a long reply streams) and its layout.

        It is drawn during a batch too: a streamed write holds one (``Markdown.append``) across the
        awaits of its parse and mounts, and a key handled meanwhile waited for the batch's end and
        the next update. Only the composer's cells are drawn, where the last layout put them; what
        the batch is changing (the reply) is not drawn until the batch ends."""
        if not (self.is_current and composer.region and composer.screen is self):
            return
        app = self.app
        held, app._batch_count = app._batch_count, 0  # App._display draws nothing in a batch
        try:
            self._draw_alone(composer)
        finally:
            app._batch_count += held

    def _draw_alone(self, composer: Widget) -> None:
        others = self._dirty_widgets - {composer}
        self._dirty_widgets.clear()
        self._compositor.update_widgets({composer})
        self._compositor_refresh()  # draws the dirty regions: the composer's
        self._dirty_widgets.update(others)

    def _on_timer_update(self) -> None:
        """A key's echo before the reply's layout: when the composer changed and a layout is due
        for something else (a streamed write), the composer is drawn first, where the last layout
        put it, and the layout follows at the next update. A layout with its full-screen frame
        takes 100-150 ms while a long Markdown reply streams; the typed key waited for it."""
        composer = self._typed_composer()
        if composer is None:
            super()._on_timer_update()
            return
        self._draw_alone(composer)
        self._update_timer.resume()  # the layout at the next update

    def _typed_composer(self) -> Widget | None:
        """The composer, if it waits to be drawn ahead of a layout it did not ask for."""
        if not self._layout_required or not self.is_current or self.app._batch_count:
            return None
        composer = self._composer
        if composer is None or composer.screen is not self:
            composer = self._composer = next(iter(self.query("#composer")), None)
        if composer is None or composer not in self._dirty_widgets or not composer.region:
            return None
        if any(composer is ancestor or composer in asked for ancestor, asked in self._layout_widgets.items()):
            return None  # the composer's own size changed (a new line): the layout places it first
        return composer
