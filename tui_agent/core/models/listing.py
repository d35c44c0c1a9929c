"""The models list as the user sees it (``tui-agent models`` and the app's picker): each model's
real window, what it can do and which profile field uses it, with the warnings that matter."""

from __future__ import annotations

from typing import NamedTuple

from tui_agent.core.models.info import OLLAMA, SERVER_NAMES, UNKNOWN, ModelInfo, capabilities_text
from tui_agent.core.models.parse import ollama_name
from tui_agent.core.models.probe import ServerModels
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible


class Row(NamedTuple):
    model: str  # as the server names it (visible: control characters shown)
    window: str
    can: str
    used_for: str
    source: str
    info: ModelInfo


def used_for(profile: Profile, name: str, found: ServerModels) -> str:
    """``chat``, ``vision``, ``chat+vision`` or empty: which profile field names this model."""
    roles = [
        role
        for role, chosen in (("chat", profile.chat_model), ("vision", profile.vision_model))
        if chosen == name or (found.server == OLLAMA and ollama_name(chosen) == ollama_name(name))
    ]
    return "+".join(roles)


def rows(profile: Profile, found: ServerModels) -> list[Row]:
    out = []
    for info in found.models:
        window = f"{info.window:,}" if info.window else "?"
        out.append(
            Row(
                visible(info.id),
                window,
                capabilities_text(info),
                used_for(profile, info.id, found),
                visible(info.window_source),
                info,
            )
        )
    return out


def heading(found: ServerModels) -> str:
    return f"{SERVER_NAMES.get(found.server, found.server)} at {visible(found.base_url)}"


def warnings(profile: Profile, found: ServerModels) -> list[str]:
    """What is wrong with the profile's choice on this server (one line each)."""
    if found.error is not None and not found.models:
        return []
    out = []
    for field in ("chat_model", "vision_model"):
        name = getattr(profile, field)
        if found.find(name) is None and found.models:
            out.append(f"{field} {visible(name)!r} is not among this server's models")
    vision = found.find(profile.vision_model)
    if vision is not None and vision.vision is False:
        out.append(f"vision_model {visible(vision.id)} cannot see images: choose one with vision")
    chat = found.find(profile.chat_model)
    if chat is not None and chat.tools is False:
        out.append(f"chat_model {visible(chat.id)} cannot call tools: the chat runs without them")
    if found.server == UNKNOWN and found.models:
        out.append("this server does not say what window or capabilities its models have: the profile's budget is used")
    return out
