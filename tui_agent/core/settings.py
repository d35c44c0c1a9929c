"""Small app-wide settings kept in the vault's ``settings`` table (the theme, say)."""

from __future__ import annotations

from tui_agent.core.store.models import Setting
from tui_agent.core.store.rows import upsert

THEME_KEY = "theme"


def get_setting(key: str) -> str | None:
    row = Setting.get_or_none(Setting.key == key)
    return None if row is None else str(row.value)


def set_setting(key: str, value: str) -> None:
    upsert(Setting, key=key, value=value)
