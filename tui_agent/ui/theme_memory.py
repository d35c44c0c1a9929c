"""The theme picked in the command palette is remembered in the vault and restored on start."""

from __future__ import annotations

from textual.app import App

from tui_agent.core.settings import THEME_KEY, get_setting, set_setting


def restore_theme(app: App[None]) -> None:
    saved = get_setting(THEME_KEY)
    if saved and saved in app.available_themes:
        app.theme = saved
    app.theme_changed_signal.subscribe(app, lambda theme: set_setting(THEME_KEY, theme.name))
