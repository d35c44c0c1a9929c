"""What the first paint needs of the store, read in one call on the store's thread: the saved
theme, the active profile, the conversation to open and its newest page (the screen draws it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tui_agent.core import profiles
from tui_agent.core.store import batch, history, pages
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
    loop finds it read: core.endpoint_quirks); ``stored``: the settings, read already."""
    from tui_agent.core.endpoint_quirks import endpoint_quirks

    profile = profiles.active_profile(stored)
    endpoint_quirks(profile.base_url, stored)
    return profile


def first_read() -> FirstRead:
    """Two round trips to the store (tests/store/test_round_trips.py): the settings and the profiles
    together (store/batch.py); then the conversation to open and its newest page, with its pictures
    and alternatives (pages.with_page)."""
    settings, every = batch.together(
        Setting._meta.database,
        [("SELECT key, value FROM settings", []), ("SELECT * FROM profiles ORDER BY id", [])],
    )
    stored = {str(key): str(value) for key, value in settings.rows}
    profile = profiles.chosen_profile(stored, every.models(Profile)) or profiles.active_profile(stored)
    from tui_agent.core.endpoint_quirks import endpoint_quirks

    endpoint_quirks(profile.base_url, stored)
    remembered = stored.get(history.LAST_CONVERSATION_KEY, "")
    if remembered.isdigit():
        conversation, page, _ = pages.with_page(int(remembered), PAGE)
        if conversation is not None:
            return FirstRead(stored.get(THEME_KEY), profile, conversation.id, page)
    last = history.last_conversation({})  # none remembered (or it was deleted): the newest
    if last is not None:
        conversation, page, _ = pages.with_page(last.id, PAGE)
        if conversation is not None:
            return FirstRead(stored.get(THEME_KEY), profile, conversation.id, page)
    return FirstRead(stored.get(THEME_KEY), profile, None, None)
