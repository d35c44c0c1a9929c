"""The message cursor of the chat log: Up/Down through messages and tool blocks, a visible mark,
Enter for the message's actions, Down past the last (or Esc) back to the composer."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget

from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.own_styles import set_own_class


class CursorAction(Message):
    """The user asked for ``action`` (an app action name) on the message under the cursor."""

    def __init__(self, action: str, widget: Widget) -> None:
        super().__init__()
        self.action = action
        self.widget = widget


class CursorLeft(Message):
    """The cursor left the log (Down past the last message, or Esc): focus goes back to the composer."""


CURSOR_BINDINGS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    Binding("up", "cursor_up", "Previous message", show=False, id="cursor.up"),
    Binding("down", "cursor_down", "Next message", show=False, id="cursor.down"),
    Binding("enter", "cursor_menu", "Actions", id="cursor.menu"),
    Binding("c", "cursor_do('copy_message')", "Copy", id="cursor.copy"),
    Binding("p", "cursor_do('copy_to_prompt')", "To prompt", id="cursor.to_prompt"),
    Binding("r", "cursor_do('regenerate')", "Regenerate", id="cursor.regenerate"),
    Binding("e", "cursor_do('edit_message')", "Edit", id="cursor.edit"),
    Binding("left", "cursor_alternative(-1)", "Previous alternative", show=False, id="cursor.alt_prev"),
    Binding("right", "cursor_alternative(1)", "Next alternative", show=False, id="cursor.alt_next"),
    Binding("escape", "cursor_leave", "Back to composer", id="cursor.leave"),
]
LETTER_KEYS = {b.key for b in CURSOR_BINDINGS if isinstance(b, Binding) and b.action.startswith("cursor_do")}


class MessageCursorMixin:
    """Mixed into the chat log (a scrollable container whose children are the message widgets)."""

    cursor: Widget | None = None
    clicked = False  # the cursor came from a click (in a browser, the way to focus): letters are text

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The cursor's keys exist only while there is a cursor (a focused image keeps its own); its
        letter commands only on a cursor moved with the keyboard."""
        if action == "cursor_do":
            return self.cursor is not None and not self.clicked
        if action.startswith("cursor_") and action not in ("cursor_up", "cursor_down"):
            return self.cursor is not None
        return True

    def selectable(self) -> list[Widget]:
        return [child for child in self.children if getattr(child, "message_id", None) is not None]  # type: ignore[attr-defined]

    def move_cursor_to(
        self, widget: Widget | None, *, scroll: bool = True, clicked: bool = False, refresh_keys: bool = True
    ) -> None:
        """``refresh_keys`` False: the caller has just focused the log, and the focus change refreshes
        the bindings after the next refresh (Textual), with the cursor set by then."""
        keys_before = self._cursor_keys()
        self.clicked = clicked  # the letter commands follow a keyboard cursor only (the footer below)
        if self.cursor is not None and self.cursor is not widget:
            set_own_class(self.cursor, False, "-cursor")
        self.cursor = widget
        if widget is not None:
            set_own_class(widget, True, "-cursor")  # a long reply's own widgets are not restyled
            if scroll:
                self.scroll_to_widget(widget, animate=False)  # type: ignore[attr-defined]
        if refresh_keys and self._cursor_keys() != keys_before:
            # The footer shows the cursor's keys only with one (check_action). Refreshed only when
            # that changes: the footer builds all its keys again at each refresh, and Up/Down from
            # one message to the next would pay for it at every key.
            self.refresh_bindings()  # type: ignore[attr-defined]

    def _take_focus(self) -> bool:
        """Focus the log at once (``focus()`` waits a turn); did the focus change? The footer is then
        rebuilt once for both, not once for the cursor's keys and again for the focus."""
        screen: Any = self.screen  # type: ignore[attr-defined]
        if screen.focused is self:
            return False
        screen.set_focus(self)
        return screen.focused is self

    def _cursor_keys(self) -> tuple[bool, bool]:
        """What ``check_action`` decides the cursor's keys by."""
        return self.cursor is not None, self.clicked

    def enter_cursor(self) -> None:
        """From the composer: the cursor starts on the newest message."""
        items = self.selectable()
        if not items:
            return
        self.move_cursor_to(items[-1], refresh_keys=not self._take_focus())

    async def action_cursor_up(self) -> None:
        items = self.selectable()
        if not items:
            return
        if self.cursor not in items:
            self.move_cursor_to(items[-1])
            return
        index = items.index(self.cursor)
        if index == 0 and getattr(self, "has_older", False):
            await self.loads_done()  # type: ignore[attr-defined]  # a page on its way (a scroll's) comes first
            if getattr(self, "has_older", False):
                await self.load_older()  # type: ignore[attr-defined]
            items = self.selectable()
            index = items.index(self.cursor)
        self.move_cursor_to(items[max(0, index - 1)])

    async def action_cursor_down(self) -> None:
        items = self.selectable()
        if self.cursor in items and self.cursor is items[-1] and getattr(self, "has_newer", False):
            await self.loads_done()  # type: ignore[attr-defined]
            await self.load_newer()  # type: ignore[attr-defined]  # the end of what is mounted is not the end
            items = self.selectable()
        if self.cursor not in items or items.index(self.cursor) == len(items) - 1:
            self.action_cursor_leave()
            return
        self.move_cursor_to(items[items.index(self.cursor) + 1])

    def action_cursor_leave(self) -> None:
        self.move_cursor_to(None)
        self.post_message(CursorLeft())  # type: ignore[attr-defined]

    def action_cursor_menu(self) -> None:
        self.action_cursor_do("message_menu")

    def action_cursor_do(self, action: str) -> None:
        if self.cursor is not None:
            self.post_message(CursorAction(action, self.cursor))  # type: ignore[attr-defined]

    def action_cursor_alternative(self, delta: int) -> None:
        if self.cursor is None:
            return
        bars = list(self.cursor.query(AlternativesBar))
        if bars:
            bars[0].step(delta)
            return
        carousel: Any = next(iter(self.cursor.query("ImageCarousel")), None)
        if carousel is not None:
            carousel.action_next() if delta > 0 else carousel.action_previous()

    def on_blur(self, event: events.Blur) -> None:
        if self.screen is not self.app.screen:  # type: ignore[attr-defined]
            return  # a dialog opened over the log (the actions menu): the cursor stays
        if self.cursor is not None:
            set_own_class(self.cursor, False, "-cursor")
            self.cursor = None

    def on_click(self, event: events.Click) -> None:
        """A click on a message selects it (clicks on buttons inside still do their own thing)."""
        widget: Widget | None = event.widget
        while widget is not None and widget.parent is not self:
            widget = widget.parent  # type: ignore[assignment]
        if widget is not None and getattr(widget, "message_id", None) is not None:
            self.move_cursor_to(widget, clicked=True, refresh_keys=not self._take_focus())

    def typing_target(self, event: events.Key) -> Widget | None:
        """The composer, when ``event`` is typing that belongs there: a printable key the cursor does
        not take (not a listed command, not a key of the focused widget inside the log)."""
        if not (event.is_printable and event.character):
            return None
        if self.cursor is not None and event.key in LETTER_KEYS and not self.clicked:
            return None  # a listed command (its binding runs)
        if _own_key(self.screen.focused, self, event.key):  # type: ignore[attr-defined]
            return None  # a key of the focused widget inside the log (a picture's o and e): its binding runs
        return next(iter(self.screen.query("#composer")), None)  # type: ignore[attr-defined]

    def hand_over(self, composer: Widget) -> None:
        """Typing started in the log: the composer takes the focus now, before the key is delivered,
        so this key and every later one reach it in the order typed (route_typing)."""
        if self.cursor is not None:
            self.move_cursor_to(None)
        self.screen.set_focus(composer)  # type: ignore[attr-defined]  # at once: focus() waits a turn

    def on_key(self, event: events.Key) -> None:
        """A key that reached the log without passing route_typing (posted to it directly): typing
        still goes on to the composer, nothing typed is lost."""
        composer = self.typing_target(event)
        if composer is None:
            return
        event.stop()
        event.prevent_default()
        self.hand_over(composer)
        composer.post_message(events.Key(event.key, event.character))


def route_typing(focused: Widget | None, event: events.Key) -> None:
    """Called by the app for every key before it is delivered to the focused widget: when the focus
    is in the chat log and the key is typing, the composer takes the focus first. The decision is made
    in the order keys arrive (a browser sends a typed word in one burst, Enter included), so no key
    can overtake another on its way (deciding in the log, after the key was queued there, let the
    keys that came after it reach the composer first)."""
    node: Any = focused
    while node is not None and not isinstance(node, MessageCursorMixin):
        node = node.parent
    if node is not None and (composer := node.typing_target(event)) is not None:
        node.hand_over(composer)


def _own_key(focused: Widget | None, log: object, key: str) -> bool:
    """Is ``key`` bound by the focused widget inside the log or a widget between it and the log
    (a carousel, or its arrow button: the carousel's keys)?"""
    node: Any = focused
    while node is not None and node is not log:
        if any(isinstance(b, Binding) and key in b.key.split(",") for b in type(node).BINDINGS):
            return True
        node = node.parent
    return False
