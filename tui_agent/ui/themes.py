"""The theme: any of Textual's built-in themes, chosen in the palette ("Change theme") or the
sidebar, remembered across runs in the vault's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui_agent.core.store.models import Setting
from tui_agent.core.store.rows import upsert

if TYPE_CHECKING:
    from textual.app import App

THEME_KEY = "theme"


def saved_theme() -> str | None:
    setting = Setting.get_or_none(Setting.key == THEME_KEY)
    return setting.value if setting is not None else None


def save_theme(name: str) -> None:
    upsert(Setting, key=THEME_KEY, value=name)


def apply_saved_theme(app: App[Any], name: str | None) -> None:
    """Use the remembered theme ``name`` (read with the first paint's reads; an unknown name, e.g.
    from a newer Textual, is ignored), then remember every later change however it is made (on the
    store's thread)."""
    from tui_agent.core.store import worker

    if name and name in app.available_themes:
        app.theme = name
    app.theme_changed_signal.subscribe(
        app, lambda theme: app.run_worker(worker.run(save_theme, theme.name), group="theme", exit_on_error=False)
    )


def theme_names(app: App[Any]) -> list[str]:
    return sorted(name for name in app.available_themes if name != "textual-ansi")
