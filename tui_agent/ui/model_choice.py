"""Choosing a model in the app: the picker, then the profile field saved on the store's thread (the
UI never waits on the store), then the sidebar and status line told."""

from __future__ import annotations

import logging
from typing import Any

from textual.app import App

from tui_agent.core import profiles
from tui_agent.core.store import worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible
from tui_agent.core.vault import Vault
from tui_agent.ui.screens.model_picker import Choice, ModelPicker
from tui_agent.ui.widgets.sidebar_messages import ProfileChanged

log = logging.getLogger("tui_agent.ui")


async def choose_model(app: App[Any], vault: Vault) -> None:
    """Open the picker for the active profile; the choice sets its chat_model or vision_model."""
    try:
        profile = await worker.run(profiles.active_profile)  # on the store's thread
    except STORE_FAILURES as exc:
        app.notify(visible(f"cannot read the profile: {exc}"), severity="error")
        return

    def chosen(choice: Choice | None) -> None:
        if choice is not None:
            app.run_worker(_save(app, *choice), group="models", exit_on_error=False)

    app.push_screen(ModelPicker(profile, vault), chosen)


def _set(field: str, name: str) -> Profile:
    profiles.set_field(profiles.active_profile(), field, name)
    return profiles.active_profile()


async def _save(app: App[Any], field: str, name: str) -> None:
    from tui_agent.ui.widgets.sidebar import ProfileEditor

    try:
        profile = await worker.run(_set, field, name)
    except Exception as exc:  # a profile error or the store's: one line, nothing changed
        log.warning("%s not set: %s", field, exc)
        app.notify(visible(f"{field} not set: {exc}"), severity="error")
        return
    for editor in app.query(ProfileEditor):
        editor.refresh_fields(profile)
    app.post_message(ProfileChanged())
    app.notify(visible(f"{field} is now {name}"), timeout=3)
