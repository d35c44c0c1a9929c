"""Ask the server what it has: ``/v1/models`` everywhere, then the server's own endpoints.

Blocking HTTP with short timeouts and one deadline for the whole probe: call it from a worker
thread (catalog.py does), never from an event loop. Any failure is one line in ``error``.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, NamedTuple

from tui_agent.core.models import parse
from tui_agent.core.models.info import LLAMACPP, LMSTUDIO, OLLAMA, OPENROUTER, UNKNOWN, VLLM, ModelInfo

log = logging.getLogger("tui_agent.models")

REQUEST_TIMEOUT_S = 2.0
PROBE_DEADLINE_S = 5.0
# `tui-agent models`: the user asked and waits for the answer (a local server busy generating, a
# loaded machine, can take longer to list its models than the app's background check waits).
ASKED_REQUEST_TIMEOUT_S = 10.0
ASKED_DEADLINE_S = 30.0
MAX_BODY = 4 * 1024 * 1024  # a models list with hundreds of entries (OpenRouter) is ~1 MB


class ServerModels(NamedTuple):
    """What one endpoint said: its kind, its models (listing order) and a failure line if any."""

    base_url: str
    server: str
    models: tuple[ModelInfo, ...]
    error: str | None = None
    checked_at: float = 0.0

    def find(self, name: str) -> ModelInfo | None:
        """The model named ``name``, also as Ollama spells it (``qwen3`` is ``qwen3:latest``)."""
        for info in self.models:
            if info.id == name:
                return info
        if self.server == OLLAMA:
            full = parse.ollama_name(name)
            for info in self.models:
                if parse.ollama_name(info.id) == full:
                    return info._replace(id=name)
        return None


class _Deadline:
    def __init__(self, seconds: float, request_s: float | None = None) -> None:
        self.end = time.monotonic() + seconds
        self.request_s = request_s

    def timeout(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0.05:
            raise TimeoutError("the probe ran out of time")
        return min(REQUEST_TIMEOUT_S if self.request_s is None else self.request_s, left)


class _Http:
    def __init__(self, base_url: str, api_key: str | None, deadline: _Deadline) -> None:
        import httpx2

        from tui_agent.core import tls

        self.base_url = base_url.rstrip("/")
        self.root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        # The key goes only to a server that asks for it (401/403 without it): local servers and
        # OpenRouter's list need none, and a key is sent no more than it must be.
        self.api_key = api_key
        self.client = httpx2.Client(verify=tls.context(), follow_redirects=False)
        self.deadline = deadline

    def close(self) -> None:
        self.client.close()

    def get(self, url: str) -> Any:
        return self._send("GET", url, None)

    def post(self, url: str, body: dict[str, Any]) -> Any:
        return self._send("POST", url, body)

    def _send(self, method: str, url: str, body: dict[str, Any] | None) -> Any:
        """The JSON answer, or None when the server has no such endpoint (or answers it badly)."""
        response = self.client.request(method, url, json=body, timeout=self.deadline.timeout())
        if response.status_code != 200 or len(response.content) > MAX_BODY:
            log.debug("%s %s: %s", method, url, response.status_code)
            return None
        try:
            return json.loads(response.content)
        except ValueError:
            return None


def probe(
    base_url: str, api_key: str | None = None, want: list[str] | None = None, *, asked: bool = False
) -> ServerModels:
    """The endpoint's models. ``want``: details (Ollama's ``/api/show``) only for these; None for
    every listed model (``tui-agent models``). ``asked``: the user waits for it (longer limits)."""
    import httpx2

    started = time.time()
    deadline = _Deadline(ASKED_DEADLINE_S, ASKED_REQUEST_TIMEOUT_S) if asked else _Deadline(PROBE_DEADLINE_S)
    try:
        http = _Http(base_url, api_key, deadline)
    except Exception as exc:
        return ServerModels(base_url, UNKNOWN, (), f"cannot ask {base_url}: {exc}", started)
    try:
        listing = _listing(http)
        if isinstance(listing, str):
            return ServerModels(base_url, UNKNOWN, (), listing, started)
        entries = parse.listed(listing)
        kind = parse.server_kind(entries) or UNKNOWN
        if kind == UNKNOWN and http.base_url.startswith("http://"):
            kind = _native_kind(http)  # a local server of an older version (not a cloud API over https)
        models = _details(http, kind, entries, want)
        return ServerModels(base_url, kind, tuple(models), None, started)
    except (httpx2.TimeoutException, TimeoutError):
        return ServerModels(base_url, UNKNOWN, (), f"{base_url} did not answer the model questions in time", started)
    except httpx2.HTTPError as exc:
        return ServerModels(base_url, UNKNOWN, (), f"cannot reach {base_url} ({type(exc).__name__})", started)
    finally:
        http.close()


def _listing(http: _Http) -> Any:
    """``GET /models``, or one line saying why not."""
    response = http.client.get(http.base_url + "/models", timeout=http.deadline.timeout())
    if response.status_code in (401, 403) and http.api_key:
        http.client.headers["Authorization"] = f"Bearer {http.api_key}"
        response = http.client.get(http.base_url + "/models", timeout=http.deadline.timeout())
    if response.status_code != 200:
        detail = response.text[:200].replace("\n", " ").strip()
        return f"{http.base_url}/models answered {response.status_code}" + (f": {detail}" if detail else "")
    try:
        return json.loads(response.content)
    except ValueError:
        return f"{http.base_url}/models did not answer with JSON"


def _native_kind(http: _Http) -> str:
    """A server whose ``/v1/models`` did not say what it is: its own endpoints may."""
    version = http.get(http.root + "/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str) and http.get(http.root + "/api/ps"):
        return OLLAMA
    native = parse.listed(http.get(http.root + "/api/v0/models"))
    if any("max_context_length" in e and "type" in e for e in native):
        return LMSTUDIO
    props = http.get(http.root + "/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        return LLAMACPP
    return UNKNOWN


def _details(http: _Http, kind: str, entries: list[dict[str, Any]], want: list[str] | None) -> list[ModelInfo]:
    ids = [e["id"] for e in entries]
    if kind == VLLM:
        return [parse.from_vllm(e) for e in entries]
    if kind == OPENROUTER:
        return [parse.from_openrouter(e) for e in entries]
    if kind == LLAMACPP:
        props = http.get(http.root + "/props")
        return [parse.from_llamacpp(e, props) for e in entries]
    if kind == OLLAMA:
        loaded = parse.ollama_loaded(http.get(http.root + "/api/ps"))
        names = ids if want is None else [w for w in dict.fromkeys(want) if w]
        out = [parse.from_ollama(name, http.post(http.root + "/api/show", {"model": name}), loaded) for name in names]
        shown = {parse.ollama_name(i.id) for i in out}
        out += [ModelInfo(i, OLLAMA) for i in ids if parse.ollama_name(i) not in shown]
        return out
    if kind == LMSTUDIO:
        native = http.get(http.root + "/api/v1/models")
        found = parse.from_lmstudio_v1(native)
        if not found:
            native = http.get(http.root + "/api/v0/models")
            found = parse.from_lmstudio_v0(native)
        skip = parse.lmstudio_embeddings(native)
        listed = [found.get(i) or ModelInfo(i, LMSTUDIO) for i in ids if i not in skip]
        return listed + [m for k, m in found.items() if k not in ids]
    return [ModelInfo(i) for i in ids]
