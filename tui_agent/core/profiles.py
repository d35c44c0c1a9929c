"""Profiles: every field validated, errors name the field, no silent fallback."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlparse

from tui_agent.core.store.models import Profile, Setting, utcnow
from tui_agent.core.store.rows import upsert

OLLAMA_URL = "http://localhost:11434/v1"
ACTIVE_PROFILE_KEY = "active_profile"
DEFAULT_PROFILE_NAME = "default"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A DNS name or IPv4 address (letters, digits, '-', '.', '_'), or an IPv6 address (brackets removed).
_HOST_RE = re.compile(r"^([\w-]+(\.[\w-]+)*\.?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.%A-Za-z]*)$")


class ProfileError(ValueError):
    """A profile value is missing or invalid; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _text(required: bool) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip()
        if required and not value:
            raise ValueError("must not be empty")
        return value

    return parse


def _url(required: bool) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip()
        if not value and not required:
            return ""
        if any(ch.isspace() or not ch.isprintable() for ch in value):
            raise ValueError(f"must not contain spaces or control characters, got {raw!r}")
        try:
            parsed = urlparse(value)
        except ValueError:  # e.g. an unclosed '[' of an IPv6 address
            parsed = urlparse("")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"must be an http(s) URL, got {raw!r}")
        if not _HOST_RE.match(parsed.hostname or ""):
            raise ValueError(f"must name a host (like localhost, 127.0.0.1 or api.example.com), got {raw!r}")
        try:
            parsed.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
        except ValueError:
            raise ValueError(f"has an invalid port (0-65535), got {raw!r}") from None
        return value.rstrip("/")

    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}; got {raw!r}")
        return value

    return parse


def _number(kind: type, low: float, high: float) -> Callable[[str], Any]:
    def parse(raw: str) -> Any:
        try:
            value = kind(str(raw).strip())
        except ValueError:
            raise ValueError(f"must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be between {low:g} and {high:g}, got {value}")
        return value

    return parse


def _optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Empty means "not set" (None); anything else must pass ``parse``."""

    def parse_optional(raw: str) -> Any:
        return None if str(raw).strip() in ("", "None") else parse(raw)

    return parse_optional


def _env_name(raw: str) -> str:
    value = raw.strip()
    if value.startswith("sk-") or len(value) > 64:
        # Looks like a key: never store it, never echo it back.
        raise ValueError("holds the name of the variable, never the key itself (e.g. OPENAI_API_KEY)")
    if value and not ENV_NAME_RE.match(value):
        raise ValueError(f"must be the NAME of an environment variable (like OPENAI_API_KEY), got {raw!r}")
    return value


def _argv_template(raw: str) -> str:
    try:
        argv = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f'must be a JSON list like ["flux2", "{{prompt}}", "{{output}}"] ({exc.msg})') from None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ValueError("must be a non-empty JSON list of non-empty strings")
    from tui_agent.core.tools.command_guard import template_reason

    if (reason := template_reason(argv)) is not None:
        raise ValueError(reason)
    return json.dumps(argv)


class FieldSpec(NamedTuple):  # not a dataclass: that costs ~1 ms of exec at start
    name: str
    parse: Callable[[str], Any]
    help: str
    multiline: bool = False


FIELDS: list[FieldSpec] = [
    FieldSpec("base_url", _url(True), "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1"),
    FieldSpec("api_key_env", _env_name, "NAME of the env var holding the API key (empty: no key)"),
    FieldSpec("chat_model", _text(True), "model for every request except the one after image generation"),
    FieldSpec("vision_model", _text(True), "model for the follow-up right after the image tool"),
    FieldSpec("image_backend", _choice("command", "openai"), "command (flux2-style CLI) or openai (images API)"),
    FieldSpec("image_model", _text(True), "image model name (logged; sent to the images API)"),
    FieldSpec(
        "image_command",
        _argv_template,
        'argv template run without a shell, e.g. ["flux2", "{prompt}", "{output}"]; the prompt as a whole '
        "{prompt} argument, in a file ({prompt_file}) or on stdin (neither); never through a shell or interpreter",
    ),
    FieldSpec("image_base_url", _url(False), "images API endpoint (empty: same as base_url)"),
    FieldSpec("images_per_request", _number(int, 1, 4), "default image count (1-4)"),
    FieldSpec("image_timeout_s", _number(float, 1, 3600), "seconds before image generation is killed"),
    FieldSpec("web_search_backend", _choice("duckduckgo", "searxng"), "duckduckgo or searxng"),
    FieldSpec("web_search_url", _url(False), "SearXNG base URL (required for searxng)"),
    FieldSpec("system_prompt", lambda raw: raw, "extra instructions added to the system message", multiline=True),
    FieldSpec("memory", lambda raw: raw, "notes injected into every request", multiline=True),
    FieldSpec(
        "temperature",
        _optional(_number(float, 0, 2)),
        "sampling temperature (0-2); empty sends none (models that accept only the default)",
    ),
    FieldSpec("max_tool_rounds", _number(int, 1, 50), "tool rounds per turn before the loop stops"),
    FieldSpec("sql_update_approval", _choice("ask", "auto"), "ask: memory_sql UPDATE waits for your yes"),
    FieldSpec("request_timeout_s", _number(float, 1, 3600), "seconds to wait for the model"),
    FieldSpec("context_budget_tokens", _number(int, 500, 2_000_000), "approximate token budget for history"),
    FieldSpec("mcp_timeout_s", _number(float, 1, 3600), "seconds an MCP server may take to start or answer a call"),
    FieldSpec("sql_update_max_rows", _number(int, 1, 10_000), "most messages one memory_sql UPDATE may change"),
    FieldSpec(
        "sql_update_max_value_bytes", _number(int, 1, 1_000_000), "largest new content (UTF-8 bytes) memory_sql writes"
    ),
    FieldSpec(
        "chat_accepts_images",
        _choice("auto", "yes", "no"),
        "does chat_model take images? auto: only when it is vision_model; if not, earlier images go as notes",
    ),
]
FIELD_NAMES = [spec.name for spec in FIELDS]
_SPECS = {spec.name: spec for spec in FIELDS}


def field_spec(name: str) -> FieldSpec:
    try:
        return _SPECS[name]
    except KeyError:
        raise ProfileError(name, f"unknown field; fields are: {', '.join(FIELD_NAMES)}") from None


def parse_field(name: str, raw: str) -> Any:
    """Validate one raw (string) value; raise ProfileError naming the field."""
    spec = field_spec(name)
    try:
        return spec.parse(str(raw))
    except ValueError as exc:
        raise ProfileError(name, str(exc)) from None


def validate_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise ProfileError("name", f"must be 1-64 letters, digits, '.', '_' or '-', got {name!r}")
    return name


def validate_profile(profile: Profile) -> None:
    """Check a whole profile, including rules that span fields."""
    validate_name(profile.name)
    for spec in FIELDS:
        parse_field(spec.name, str(getattr(profile, spec.name)))
    # web_search_backend searxng without web_search_url is allowed here (set them in either order);
    # the web_search tool says what is missing when it is used.


def field_as_text(profile: Profile, name: str) -> str:
    value = getattr(profile, name)
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def set_field(profile: Profile, name: str, raw: str) -> Profile:
    """Validate and save one field; the profile is unchanged when the value is invalid."""
    from tui_agent.core import approvals

    value = parse_field(name, raw)
    old = getattr(profile, name)
    before = approvals.profile_slots(profile)
    setattr(profile, name, value)
    try:
        validate_profile(profile)
    except ProfileError:
        setattr(profile, name, old)
        raise
    profile.updated_at = utcnow()
    profile.save()
    approvals.carry_over(before, approvals.profile_slots(profile))  # written here: approved here
    return profile


def default_values(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """First-run values: OPENAI_BASE_URL/OPENAI_API_KEY when set, else Ollama's endpoint."""
    env = os.environ if environ is None else environ
    if env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"):
        return {
            "base_url": (env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/"),
            "api_key_env": "OPENAI_API_KEY" if env.get("OPENAI_API_KEY") else "",
            "chat_model": "gpt-4o-mini",
            "vision_model": "gpt-4o-mini",
            "image_model": "flux2",
        }
    return {
        "base_url": OLLAMA_URL,
        "api_key_env": "",
        "chat_model": "qwen3",
        "vision_model": "qwen2.5vl",
        "image_model": "flux2",
    }


def create_profile(name: str, values: dict[str, Any] | None = None, *, approve: bool = True) -> Profile:
    """A new profile from ``values`` (default: first-run values). ``approve``: its values were chosen
    on this machine (not copied from the store), so they are approved here (core.approvals)."""
    validate_name(name)
    if Profile.get_or_none(Profile.name == name) is not None:
        raise ProfileError("name", f"a profile named {name!r} already exists")
    profile = Profile(name=name, **(values or default_values()))
    validate_profile(profile)
    profile.save()
    if approve:
        from tui_agent.core import approvals

        approvals.approve_written([item for item in approvals.profile_slots(profile).values() if item is not None])
    return profile


def ensure_default_profile() -> Profile:
    """Make sure at least one profile exists and one is active; return the active one (one
    statement when one is: a round trip to a store far away)."""
    try:
        return active_profile()
    except ProfileError:
        if Profile.select().count() != 0:
            raise
    create_profile(DEFAULT_PROFILE_NAME)
    return active_profile()


def get_profile(name: str) -> Profile:
    profile = Profile.get_or_none(Profile.name == name)
    if profile is None:
        names = ", ".join(p.name for p in Profile.select(Profile.name).order_by(Profile.name))
        raise ProfileError("profile", f"no profile named {name!r} (profiles: {names or 'none'})")
    return profile


class _RunProfile:
    """``--profile NAME`` for one run of the app: it wins over the stored active profile until
    ``use_profile`` (a permanent switch) or ``set_run_profile(None)``; nothing is written."""

    name: str | None = None


def set_run_profile(name: str | None) -> None:
    if name is not None:
        get_profile(name)  # raises ProfileError naming the profiles that exist
    _RunProfile.name = name


def chosen_profile(stored: Mapping[str, str], every: Sequence[Profile]) -> Profile | None:
    """The profile in use among ``every`` profile (read already, with the settings ``stored``);
    None when there is none to choose yet (``active_profile`` then makes the choice)."""
    by_name = {profile.name: profile for profile in every}
    if _RunProfile.name is not None and _RunProfile.name in by_name:
        return by_name[_RunProfile.name]
    return by_name.get(stored.get(ACTIVE_PROFILE_KEY, ""))


def active_profile(stored: Mapping[str, str] | None = None) -> Profile:
    """The profile in use; ``stored``: the settings, read already. One statement when it was chosen
    (the app reads it before each turn)."""
    if _RunProfile.name is not None:
        chosen = Profile.get_or_none(Profile.name == _RunProfile.name)
        if chosen is not None:
            return chosen
    if stored is None:
        # The setting and the profile it names, in one statement.
        named = Setting.select(Setting.value).where(Setting.key == ACTIVE_PROFILE_KEY)
        active = Profile.get_or_none(Profile.name == named)
        if active is not None:
            return active
        setting = Setting.get_or_none(Setting.key == ACTIVE_PROFILE_KEY)
        name = setting.value if setting is not None else None
    else:
        name = stored.get(ACTIVE_PROFILE_KEY)
    if name is not None:
        profile = Profile.get_or_none(Profile.name == name)
        if profile is not None:
            return profile
    profile = Profile.select().order_by(Profile.id).first()
    if profile is None:
        raise ProfileError("profile", "no profiles exist; run `tui-agent profile create NAME`")
    use_profile(profile.name)
    return profile


def use_profile(name: str) -> Profile:
    profile = get_profile(name)
    upsert(Setting, key=ACTIVE_PROFILE_KEY, value=name)
    _RunProfile.name = None
    return profile


def resolve_profile(name: str | None) -> Profile:
    """The named profile, or the active one (creating the default on first run)."""
    active = ensure_default_profile()
    profile = get_profile(name) if name else active
    validate_profile(profile)
    return profile


def accepts_images(profile: Profile, model: str) -> bool:
    """May a request to ``model`` carry image pixels? The vision model always; the chat model per
    ``chat_accepts_images`` (auto: only when it is the vision model too)."""
    if model == profile.vision_model:
        return True
    setting = getattr(profile, "chat_accepts_images", "auto")
    return setting == "yes" or (setting == "auto" and profile.chat_model == profile.vision_model)


def profile_as_dict(profile: Profile) -> dict[str, Any]:
    return {"name": profile.name, **{name: getattr(profile, name) for name in FIELD_NAMES}}
