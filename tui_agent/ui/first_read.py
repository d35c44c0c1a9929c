"""What the first paint needs of the store, read in one call on the store's thread: the saved
theme, the active profile, the conversation to open and its newest page (the screen draws it)."""

from __future__ import annotations

from dataclasses import dataclass

from tui_agent.core import profiles
from tui_agent.core.store import history, pages
from tui_agent.core.store.models import Profile
from tui_agent.core.store.pages import Page
from tui_agent.ui.themes import saved_theme
from tui_agent.ui.widgets.log_release import PAGE


@dataclass
class FirstRead:
    theme: str | None
    profile: Profile
    conversation_id: int | None
    page: Page | None


def active_profile() -> Profile:
    """The active profile, and what its endpoint refused before (the client built on the event
    loop finds it read: core.llm.endpoint_quirks)."""
    from tui_agent.core.llm import endpoint_quirks

    profile = profiles.active_profile()
    endpoint_quirks(profile.base_url)
    return profile


def first_read() -> FirstRead:
    profile = active_profile()
    last = history.last_conversation()
    page = pages.newest(last.id, PAGE) if last is not None else None
    return FirstRead(saved_theme(), profile, last.id if last is not None else None, page)
