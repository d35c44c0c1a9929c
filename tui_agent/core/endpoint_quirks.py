"""What each endpoint refused once (``stream_options``, streaming with tools), remembered for the
rest of the process, and the first kind saved in the vault's settings so a later run does not ask
again."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from tui_agent.core.store.rows import upsert

log = logging.getLogger("tui_agent.llm")

# What each endpoint refused once, remembered for the rest of the process.
NO_STREAM_OPTIONS = "no_stream_options"
NO_STREAM_WITH_TOOLS = "no_stream_with_tools"
_ENDPOINT_QUIRKS: dict[str, set[str]] = {}
QUIRKS_KEY = "endpoint_quirks "  # settings key prefix, followed by the base URL


def endpoint_quirks(base_url: str, stored: Mapping[str, str] | None = None) -> set[str]:
    """What this endpoint refused before: in this process, or saved in the vault's settings
    (``stored``: the settings, read already)."""
    key = base_url.rstrip("/")
    if key not in _ENDPOINT_QUIRKS:
        _ENDPOINT_QUIRKS[key] = set()
        try:
            from tui_agent.core.store.models import Setting

            if stored is not None:
                value = stored.get(QUIRKS_KEY + key)
            else:
                saved = Setting.get_or_none(Setting.key == QUIRKS_KEY + key)
                value = saved.value if saved is not None else None
            if value is not None:
                _ENDPOINT_QUIRKS[key].update(json.loads(value))
        except Exception as exc:  # no vault open (a bare client): remembered for this process only
            log.debug("endpoint quirks not loaded for %s: %s", key, exc)
    return _ENDPOINT_QUIRKS[key]


def remember_quirk(base_url: str, quirk: str, *, persist: bool) -> None:
    """Remember a refusal for this process; ``persist`` also saves it in the vault's settings."""
    quirks = endpoint_quirks(base_url)
    quirks.add(quirk)
    if not persist:
        return
    try:
        from tui_agent.core.store.models import Setting

        key = QUIRKS_KEY + base_url.rstrip("/")
        saved = sorted(q for q in quirks if q == NO_STREAM_OPTIONS)
        upsert(Setting, key=key, value=json.dumps(saved))
    except Exception as exc:
        log.debug("endpoint quirk %s not saved for %s: %s", quirk, base_url, exc)
