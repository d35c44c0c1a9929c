"""What a model can take, from the profile's settings and what its server says of it."""

from __future__ import annotations

from tui_agent.core.models import catalog
from tui_agent.core.store.models import Profile


def accepts_images(profile: Profile, model: str) -> bool:
    """May a request to ``model`` carry image pixels? The vision model always; the chat model per
    ``chat_accepts_images``: yes or no as set; auto: when the server says it has vision, or (the
    server does not say) when it is the vision model too. Reads only what is already known."""
    if model == profile.vision_model:
        return True
    setting = getattr(profile, "chat_accepts_images", "auto")
    if setting in ("yes", "no"):
        return setting == "yes"
    if model == profile.chat_model:
        info = catalog.cached_info(profile.base_url, model)
        if info is not None and info.vision is not None:
            return info.vision
    return profile.chat_model == profile.vision_model
