"""What the first paint needs of the store, read in one call on the store's thread: the saved
theme, the active profile, the conversation to open and its newest page (the screen draws it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tui_agent.core import profiles
from tui_agent.core.store import history, pages
from tui_agent.core.store.models import Profile, Setting
from tui_agent.core.store.pages import Page
from tui_agent.ui.themes import THEME_KEY
from tui_agent.ui.widgets.log_release import PAGE


@dataclass
class FirstRead:
    theme: str | None
    profile: Profile
    conversation_id: int | None
    page: Page | None


def active_profile(stored: Mapping[str, str] | None = None) -> Profile:
    """The active profile, and what its endpoint refused before (the client built on the event
    loop finds it read: core.llm.endpoint_quirks); ``stored``: the settings, read already."""
    from tui_agent.core.llm import endpoint_quirks

    profile = profiles.active_profile(stored)
    endpoint_quirks(profile.base_url, stored)
    return profile


def first_read() -> FirstRead:
    """Six statements: the settings, the profile, the conversation, its newest page, the page's
    pictures and its forks (tests/test_round_trips.py)."""
    stored = {setting.key: setting.value for setting in Setting.select(Setting.key, Setting.value)}
    profile = active_profile(stored)
    last = history.last_conversation(stored)
    page = pages.newest(last.id, PAGE, conversation=last) if last is not None else None
    if page is not None and last is not None:
        page.title = last.title
    return FirstRead(stored.get(THEME_KEY), profile, last.id if last is not None else None, page)
