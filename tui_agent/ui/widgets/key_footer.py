"""The Footer, rebuilt only when the keys it would show change.

Textual's Footer recomposes every key (a widget each, restyled twice as it mounts: its ``compact``
watcher sets a class, then the Footer's binding sets it back) whenever the screen publishes its
bindings: on every focus move and every ``refresh_bindings``. About half of those publish the keys
already shown (a focus move between widgets with no keys of their own, a refresh that enabled
nothing), so the rebuild drew the same row again."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    _published = False  # the bindings were published once: the Footer's compose builds keys
    _shown: tuple[tuple[object, ...], ...] | None = None  # what the last compose built them from

    def shown_keys(self, screen: Screen[Any]) -> tuple[tuple[object, ...], ...]:
        """What the Footer's compose would build now: each shown binding with its state, in order,
        and the command palette's key if the Footer shows it (whether or not its binding is)."""
        app = screen.app
        active = screen.active_bindings  # worked out anew (and every check_action asked) each time
        keys: list[tuple[object, ...]] = [
            (binding.key, app.get_key_display(binding), binding.description, binding.action, binding.group, on, tip)
            for _node, binding, on, tip in active.values()
            if binding.show
        ]
        palette = active.get(app.COMMAND_PALETTE_BINDING)
        if palette is not None and self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            _node, binding, on, tip = palette
            keys.append(("palette", binding.key, binding.description, on, tip or binding.tooltip))
        return tuple(keys)

    def compose(self) -> ComposeResult:
        # Recorded as the keys are built (a refresh after the publish that asked for them), so that
        # what is compared later is what is on screen.
        if self._published:
            self._shown = self.shown_keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if (
            self._shown is not None
            and screen.app.app_focus
            and self.is_attached
            and screen is self.screen
            and self.shown_keys(screen) == self._shown
        ):
            return
        self._published = True
        super().bindings_changed(screen)
