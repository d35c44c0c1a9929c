"""Input reaches the app in one turn of the event loop, and a key for the composer reaches it in
the next.

Textual's driver reads the terminal in a thread of its own and hands each event to the app with
``asyncio.run_coroutine_threadsafe(app._post_message(event))``: a callback that makes a task, the
task's first step a turn later that puts the event in the app's queue, and the app's own task a
turn after that, which passes a key on to the focused widget's queue for a fourth turn. Each turn
runs everything else that is ready first: while a long reply streams, a write's Markdown parse,
the mounts of its new blocks, a layout with its frame (tens of milliseconds each), so a typed key
waited behind three or four of them before the composer saw it.

- ``one_turn``: the driver's thread schedules ``app.post_message(event)`` itself
  (``call_soon_threadsafe``), so the event is posted at the next turn, in the order the terminal
  sent it (every event from the driver goes the same way: a key never overtakes a paste or a
  click sent before it).
- ``straight_to_focus``: a key posted to the app while the composer has the focus, and nothing
  else is waiting for the app or being handled by it, is passed to the composer at once, as the
  app's own handler would pass it a turn later (after the same checks: a priority binding, a
  maximized widget, a tooltip). Anything else takes Textual's way; a key that follows a waiting
  event takes it too, so keys stay in order with everything the terminal sent.

Private names of Textual used here (``Driver._app``, ``Driver._loop``, ``Widget._forward_event``,
``Screen._clear_tooltip``, ``MessagePump._pending_message``): tests/project/test_other_packages_internals.py
checks that each still exists and does what is used here."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from textual import events

from tui_agent.ui.widgets.message_cursor import route_typing

if TYPE_CHECKING:
    from textual.app import App
    from textual.driver import Driver
    from textual.message import Message
    from textual.widget import Widget

    _App = App[Any]
else:
    _App = object

log = logging.getLogger("tui_agent.ui")


def one_turn(base: type[Driver]) -> type[Driver]:
    """``base``, the driver Textual chose (the terminal's, or the browser's under ``serve``), with
    its events posted to the app from its thread in one turn of the event loop."""

    def send_message(self: Driver, message: Message) -> None:
        self._loop.call_soon_threadsafe(self._app.post_message, message)

    return type(base.__name__, (base,), {"send_message": send_message, "__module__": __name__, "__doc__": base.__doc__})


def straight_to_focus(app: App[Any], message: Message, composer: Widget, app_busy: bool) -> bool:
    """Can ``message`` go to ``composer`` now: a key the app would pass it anyway, with nothing
    posted before it still on its way (``app_busy``: the app is handling an input event)? Only
    looks: the caller passes it on."""
    if not isinstance(message, events.Key) or message.is_forwarded or app_busy:
        return False
    # Waiting for the app: in its queue, or the one it took out to look at (``_peek_message``
    # holds it in ``_pending_message`` while the message before it is handled).
    if app.message_queue_size or app._pending_message is not None:
        return False
    if app.focused is not composer:
        return False
    screen = app.screen
    if composer.screen is not screen or screen.maximized is not None:
        return False
    bound = screen.active_bindings.get(message.key)
    return bound is None or not bound.binding.priority  # the app's priority bindings first (Ctrl+Q)


class PromptInput(_App):
    """The app's side (a mixin before ``App``): its driver is wrapped by ``one_turn``, and a key
    posted to it goes ``straight_to_focus`` when it can. ``typing_target`` is the composer."""

    _handling_input = False  # on_event is handling an event from the terminal

    def typing_target(self) -> Widget:
        raise NotImplementedError

    def get_driver_class(self) -> type[Driver]:
        return one_turn(super().get_driver_class())

    def post_message(self, message: Message) -> bool:
        if isinstance(message, events.Key) and self.is_running:
            composer = self.typing_target()
            try:
                straight = straight_to_focus(self, message, composer, self._handling_input)
            except Exception:  # never a key lost to this shortcut: Textual's way instead
                log.warning("a key took Textual's way: the shortcut failed", exc_info=True)
                straight = False
            if straight:  # what the app's handler does before it passes a key on
                if not self.app_focus:
                    self.app_focus = True
                self.screen._clear_tooltip()
                composer._forward_event(message)
                return True
        return super().post_message(message)

    async def on_event(self, event: events.Event) -> None:
        if not isinstance(event, (events.InputEvent, events.Paste)) or event.is_forwarded:
            await super().on_event(event)
            return
        if isinstance(event, events.Key):
            route_typing(self.focused, event)  # typing in the chat log: the composer first, keys in order
        self._handling_input = True
        try:
            await super().on_event(event)
        finally:
            self._handling_input = False
