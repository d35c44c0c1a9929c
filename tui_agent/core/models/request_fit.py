"""The loop's side of knowing the model: what the server says of it (asked in a worker thread),
which tools it gets, and the one-line notices (each said once in a process)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from tui_agent.core.models import catalog, fit
from tui_agent.core.models.info import ModelInfo
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault

if TYPE_CHECKING:
    from tui_agent.core.context import ContextBuilder

log = logging.getLogger("tui_agent.models")


class RequestFit:
    """For one loop (one profile): asks the catalog, decides tools and window, words the notices."""

    def __init__(self, vault: Vault, profile: Profile) -> None:
        self.vault = vault
        self.profile = profile

    async def know(self, model: str) -> ModelInfo | None:
        """What the server says of ``model``: from memory while fresh, else asked in a worker
        thread (short timeouts); None when nothing is known. Never raises."""
        try:
            found = await asyncio.to_thread(catalog.lookup, self.profile, [model], self.vault)
        except Exception:  # the request goes on as today's: the window is the profile's budget
            log.warning("asking %s about %s failed", self.profile.base_url, model, exc_info=True)
            return None
        return found.find(model) if found is not None else None

    def window(self, info: ModelInfo | None) -> int | None:
        return info.window if info is not None and info.known else None

    def tools_for(
        self, info: ModelInfo | None, schemas: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]] | None, list[str]]:
        """The tool schemas to send (none to a model the server says cannot call tools) and the
        notice that says so, once."""
        if info is None or info.tools is not False or not schemas:
            return schemas, []
        said = catalog.once("no-tools", self.profile.base_url, info.id)
        return None, [fit.no_tools_text(info)] if said else []

    def fit_notices(self, info: ModelInfo | None, builder: ContextBuilder) -> list[str]:
        fitted = builder.fit
        if info is not None and fitted is not None and fitted.window is not None:
            catalog.remember_budget(self.profile.base_url, info.id, fitted.history_tokens)
        if info is None or fitted is None or not fitted.too_small or fitted.window is None:
            return []
        if not catalog.once("too-small", self.profile.base_url, info.id, str(fitted.window)):
            return []
        return [fit.too_small_text(info, fitted, builder.system_tokens)]

    def cut_notice(self, info: ModelInfo | None, prompt_tokens: int | None, builder: ContextBuilder) -> str | None:
        """The line saying the server cut the prompt, when its usage shows it (servers whose
        window is read only: elsewhere an overlong prompt is an error, not a cut)."""
        if info is None or not info.known or builder.window is None or builder.fit is None:
            return None
        if not info.loaded:
            catalog.forget(self.profile.base_url)  # this request loaded it: its real window is known now
        if builder.fit.too_small:
            return None  # said already, with the fix: the window cannot hold the tools
        sent = builder.window.text_tokens + builder.fit.tools_tokens
        if not fit.server_cut(prompt_tokens, sent, info.window):
            return None
        catalog.forget(self.profile.base_url)  # the window it reported proved wrong: ask again
        log.warning("%s read %s of ~%d tokens sent to %s", self.profile.base_url, prompt_tokens, sent, info.id)
        if not catalog.once("cut", self.profile.base_url, info.id, str(prompt_tokens)):
            return None
        return fit.cut_text(info, prompt_tokens or 0, sent)

    async def blind_vision(self, model: str) -> str | None:
        """The warning for a vision model the server says cannot see images, once."""
        info = await self.know(model)
        if info is None or info.vision is not False or not catalog.once("no-vision", self.profile.base_url, model):
            return None
        return fit.no_vision_text(info)
