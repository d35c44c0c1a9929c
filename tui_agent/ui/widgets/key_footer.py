"""The Footer, rebuilt only when the keys it would show change.

Textual's Footer recomposes every key (a widget each, restyled twice as it mounts: its ``compact``
watcher sets a class, then the Footer's binding sets it back) whenever the screen publishes its
bindings: on every focus move and every ``refresh_bindings``. About half of those publish the keys
already shown (a focus move between widgets with no keys of their own, a refresh that enabled
nothing), so the rebuild drew the same row again."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen[Any]) -> tuple[tuple[object, ...], ...]:
    """What a Footer built now would show: each shown binding with its state, in order, and the
    command palette's key (shown by the Footer whether or not its binding is)."""
    app = screen.app
    keys: list[tuple[object, ...]] = [
        (binding.key, app.get_key_display(binding), binding.description, binding.action, binding.group, enabled, tip)
        for _node, binding, enabled, tip in screen.active_bindings.values()
        if binding.show
    ]
    palette = screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
    if palette is not None:
        _node, binding, enabled, tooltip = palette
        keys.append(("palette", binding.key, binding.description, enabled, tooltip or binding.tooltip))
    return tuple(keys)


class KeyFooter(Footer):
    _shown: tuple[tuple[object, ...], ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        rebuilds = screen.app.app_focus and self.is_attached and screen is self.screen
        shown = shown_keys(screen) if rebuilds else None
        if rebuilds and shown == self._shown:
            return
        super().bindings_changed(screen)
        if rebuilds:
            self._shown = shown
