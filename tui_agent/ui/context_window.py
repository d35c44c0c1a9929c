"""Where the model's window starts in a conversation just opened: the chat log's marker shows
before any request is made (a turn's ContextBuilt event moves it afterwards)."""

from __future__ import annotations

from tui_agent.core import profiles
from tui_agent.core.context import ContextBuilder
from tui_agent.core.models import catalog
from tui_agent.core.vault import Vault


def window_start(vault: Vault, conversation_id: int) -> int | None:
    """The oldest message the next request would hold, if older ones would be left out (else
    None): the rows ContextBuilder.build keeps, without building the request (no images read)."""
    profile = profiles.active_profile()
    budget = int(profile.context_budget_tokens)
    fitted = catalog.remembered_budget(profile.base_url, profile.chat_model)  # the model's real window
    if fitted is not None:
        budget = min(budget, fitted)
    return ContextBuilder(vault).window_start(conversation_id, budget)
