"""The models of each endpoint, cached: in memory for the process and in a small file in the vault
(``cache/models.json``) the app reads at start. Everything here that may wait on the network or
the disk is blocking: call it from a worker thread, never from an event loop thread.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from tui_agent.core.models.info import LLAMACPP, LMSTUDIO, OLLAMA, UNKNOWN, ModelInfo
from tui_agent.core.models.probe import ServerModels, probe
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.models")

CACHE_NAME = "models.json"
CACHE_MAX_BYTES = 2 * 1024 * 1024
FRESH_S = 60.0  # a model known to be loaded keeps its window this long before it is asked again
UNKNOWN_FRESH_S = 600.0  # a server that says nothing about windows is not asked every turn
FAILED_FRESH_S = 15.0  # nor is one that did not answer
NOT_LOADED_FRESH_S = 2.0  # a model not loaded yet: asked again for the next request, not within one turn

_lock = threading.Lock()
_memory: dict[str, ServerModels] = {}
_warned: set[tuple[str, ...]] = set()
_budgets: dict[tuple[str, str], int] = {}


def cache_path(vault: Vault) -> Path:
    return vault.root / "cache" / CACHE_NAME


def _key(base_url: str) -> str:
    return base_url.rstrip("/")


def cached(base_url: str) -> ServerModels | None:
    """What is known of this endpoint, without asking anyone (safe on any thread)."""
    with _lock:
        return _memory.get(_key(base_url))


def cached_info(base_url: str, model: str) -> ModelInfo | None:
    """What is known of one model, without asking anyone (safe on any thread)."""
    found = cached(base_url)
    return found.find(model) if found is not None else None


def forget(base_url: str) -> None:
    """Ask the server again next time (the window it reported proved wrong)."""
    with _lock:
        current = _memory.get(_key(base_url))
        if current is not None:
            _memory[_key(base_url)] = current._replace(checked_at=0.0)


def remember_budget(base_url: str, model: str, history_tokens: int) -> None:
    """The history budget the last request to ``model`` had (where a conversation just opened
    shows its window marker before any request)."""
    with _lock:
        _budgets[_key(base_url), model] = history_tokens


def remembered_budget(base_url: str, model: str) -> int | None:
    with _lock:
        return _budgets.get((_key(base_url), model))


def once(*key: str) -> bool:
    """True the first time ``key`` is seen in this process: a warning is said once."""
    with _lock:
        if key in _warned:
            return False
        _warned.add(key)
        return True


def api_key(profile: Profile) -> str | None:
    """The profile's key when it may be sent (a withheld or missing one: the probe goes without)."""
    from tui_agent.core.llm import LLMError, resolve_api_key

    try:
        key = resolve_api_key(profile)
    except LLMError:
        return None
    return None if key == "no-key" else key


def refresh(
    profile: Profile, vault: Vault | None = None, want: list[str] | None = None, *, asked: bool = False
) -> ServerModels:
    """Ask the server now; what it said is remembered (and saved in the vault when one is given).
    A failure keeps what was known before and is returned with its one line in ``error``.
    ``asked``: the user waits for the answer (`tui-agent models`: the probe's longer limits)."""
    found = probe(profile.base_url, api_key(profile), want, asked=asked)
    key = _key(profile.base_url)
    with _lock:
        previous = _memory.get(key)
        if found.error is None:
            if previous is not None and want is not None and found.server == previous.server:
                # A probe for some models keeps what the full listing said of the others.
                probed = {m.id for m in found.models}
                found = found._replace(models=found.models + tuple(m for m in previous.models if m.id not in probed))
            _memory[key] = found
        elif previous is None:
            _memory[key] = found
        else:
            _memory[key] = previous._replace(error=found.error, checked_at=found.checked_at)
        current = _memory[key]
    if found.error is None and vault is not None:
        save(vault)
    else:
        log.info("models of %s: %s", profile.base_url, found.error)
    return current if found.error is None else found._replace(models=current.models, server=current.server)


def lookup(profile: Profile, models: list[str], vault: Vault | None = None) -> ServerModels | None:
    """What the server says of ``models``, from memory while it is fresh, else asked now."""
    current = cached(profile.base_url)
    if current is not None and _fresh(current, models):
        return current
    result = refresh(profile, vault, want=models)
    return result if result.models or result.error is None else current


def _fresh(known: ServerModels, models: list[str]) -> bool:
    age = time.time() - known.checked_at
    if known.error is not None:
        return age < FAILED_FRESH_S
    if known.server == UNKNOWN:
        return age < UNKNOWN_FRESH_S
    for name in models:
        info = known.find(name)
        if info is None or (info.window is None and known.server in (OLLAMA, LMSTUDIO, LLAMACPP)):
            return False
        if known.server in (OLLAMA, LMSTUDIO) and not info.loaded and age >= NOT_LOADED_FRESH_S:
            return False  # loaded by the next request: its real window is known after it
    return age < FRESH_S


def load(vault: Vault) -> None:
    """Read the vault's cache into memory (what was asked in this process wins). Blocking: call it
    from a worker; a missing or damaged file is no error."""
    path = cache_path(vault)
    try:
        if path.stat().st_size > CACHE_MAX_BYTES:
            return
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    endpoints = raw.get("endpoints") if isinstance(raw, dict) else None
    if not isinstance(endpoints, dict):
        return
    with _lock:
        for base_url, entry in endpoints.items():
            if not isinstance(entry, dict) or _key(base_url) in _memory:
                continue
            models = [ModelInfo.from_json(m) for m in entry.get("models") or [] if isinstance(m, dict)]
            server = entry["server"] if isinstance(entry.get("server"), str) else UNKNOWN
            checked = entry["checked_at"] if isinstance(entry.get("checked_at"), (int, float)) else 0.0
            # Marked as old: a window read from the cache is used until the server is asked again.
            _memory[_key(base_url)] = ServerModels(
                _key(base_url), server, tuple(m for m in models if m is not None), None, min(float(checked), 1.0)
            )


def save(vault: Vault) -> None:
    """Write what is known to the vault's cache (atomically; a failure is logged, not raised)."""
    with _lock:
        endpoints = {
            key: {"server": s.server, "checked_at": s.checked_at, "models": [m.to_json() for m in s.models]}
            for key, s in _memory.items()
            if s.error is None
        }
    path = cache_path(vault)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".models-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": 1, "endpoints": endpoints}, out)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("the models cache was not saved: %s", exc)


def clear() -> None:
    """Forget everything (tests; a new profile of another endpoint needs nothing of this)."""
    with _lock:
        _memory.clear()
        _warned.clear()
        _budgets.clear()
