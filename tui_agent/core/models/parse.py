"""The servers' documented answers, read into :class:`ModelInfo` (no I/O here: probe.py asks).

Shapes (tests/fixtures/models/ holds each, with its source):
- ``GET /v1/models``: every server; vLLM adds ``max_model_len``, OpenRouter ``context_length``,
  ``architecture.input_modalities`` and ``supported_parameters``, llama.cpp ``meta.n_ctx_train``;
  ``owned_by`` names Ollama (``library``), LM Studio (``organization_owner``), vLLM, llama.cpp.
- Ollama ``POST /api/show``: ``capabilities``, ``model_info.<arch>.context_length``, ``parameters``
  (text, may hold ``num_ctx``); ``GET /api/ps``: ``context_length`` of each loaded model.
- LM Studio ``GET /api/v1/models``: ``loaded_instances[].config.context_length``,
  ``max_context_length``, ``capabilities.vision``/``trained_for_tool_use``; ``GET /api/v0/models``:
  ``loaded_context_length``, ``max_context_length``, ``type`` (``vlm``), ``capabilities``.
- llama.cpp ``GET /props``: ``default_generation_settings.n_ctx``, ``modalities.vision``.
"""

from __future__ import annotations

import re
from typing import Any

from tui_agent.core.models.info import (
    LLAMACPP,
    LMSTUDIO,
    OLLAMA,
    OLLAMA_DEFAULT_WINDOW,
    OPENROUTER,
    UNKNOWN,
    VLLM,
    ModelInfo,
    positive_int,
)

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def listed(payload: Any) -> list[dict[str, Any]]:
    """The entries of an OpenAI ``/models`` list (``data``), the ones that name a model."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return []
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"].strip()]


def server_kind(entries: list[dict[str, Any]]) -> str:
    """Which server answered ``/v1/models``, from what its entries carry."""
    owners = {e.get("owned_by") for e in entries}
    if "vllm" in owners or any("max_model_len" in e for e in entries):
        return VLLM
    if any("context_length" in e and ("architecture" in e or "pricing" in e) for e in entries):
        return OPENROUTER
    if "llamacpp" in owners or any(isinstance(e.get("meta"), dict) and "n_ctx_train" in e["meta"] for e in entries):
        return LLAMACPP
    if "library" in owners:
        return OLLAMA
    if "organization_owner" in owners:
        return LMSTUDIO
    return UNKNOWN


def from_vllm(entry: dict[str, Any]) -> ModelInfo:
    window = positive_int(entry.get("max_model_len"))
    return ModelInfo(entry["id"], VLLM, window, "vLLM max_model_len" if window else "", window, loaded=True)


def from_openrouter(entry: dict[str, Any]) -> ModelInfo:
    top = _obj(entry, "top_provider")
    window = positive_int(top.get("context_length")) or positive_int(entry.get("context_length"))
    arch = _obj(entry, "architecture")
    modalities = arch.get("input_modalities")
    params = entry.get("supported_parameters")
    return ModelInfo(
        entry["id"],
        OPENROUTER,
        window,
        "OpenRouter context_length" if window else "",
        positive_int(entry.get("context_length")),
        vision=("image" in modalities) if isinstance(modalities, list) else None,
        tools=("tools" in params) if isinstance(params, list) else None,
        thinking=("reasoning" in params) if isinstance(params, list) else None,
    )


def ollama_name(name: str) -> str:
    """Ollama's name for a model: the tag defaults to ``latest``."""
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


def ollama_loaded(ps: Any) -> dict[str, int | None]:
    """Loaded models (``/api/ps``) and the context each runs with, by full name."""
    models = ps.get("models") if isinstance(ps, dict) else None
    loaded: dict[str, int | None] = {}
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict):
            continue
        for key in ("name", "model"):
            if isinstance(entry.get(key), str):
                loaded[ollama_name(entry[key])] = positive_int(entry.get("context_length"))
    return loaded


def from_ollama(model: str, show: Any, loaded: dict[str, int | None]) -> ModelInfo:
    """One model from ``/api/show`` and the ``/api/ps`` list (:func:`ollama_loaded`)."""
    show = show if isinstance(show, dict) else {}
    trained = None
    info = show.get("model_info")
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        trained = positive_int(info.get(f"{arch}.context_length")) if isinstance(arch, str) else None
        if trained is None:
            trained = next(
                (positive_int(v) for k, v in info.items() if k.endswith(".context_length") and positive_int(v)), None
            )
    params = show.get("parameters")
    found = _NUM_CTX.search(params) if isinstance(params, str) else None
    num_ctx = int(found.group(1)) if found else None
    caps = show.get("capabilities")
    caps = [c for c in caps if isinstance(c, str)] if isinstance(caps, list) else None
    name = ollama_name(model)
    is_loaded = name in loaded
    if is_loaded and loaded[name]:
        window, source = loaded[name], "loaded: Ollama /api/ps"
    elif num_ctx:
        window, source = num_ctx, "num_ctx of its Modelfile: Ollama /api/show"
    else:
        window = OLLAMA_DEFAULT_WINDOW
        source = "assumed: Ollama's default below 24 GiB of VRAM unless OLLAMA_CONTEXT_LENGTH is set; not loaded yet"
    if trained is not None and window is not None and window > trained:
        window, source = trained, "the model's own length: Ollama /api/show"
    return ModelInfo(
        model,
        OLLAMA,
        window,
        source,
        trained,
        vision=("vision" in caps) if caps is not None else None,
        tools=("tools" in caps) if caps is not None else None,
        thinking=("thinking" in caps) if caps is not None else None,
        loaded=is_loaded,
    )


def from_lmstudio_v1(payload: Any) -> dict[str, ModelInfo]:
    """LM Studio's native ``/api/v1/models`` (0.4+): by model key."""
    models = payload.get("models") if isinstance(payload, dict) else None
    out: dict[str, ModelInfo] = {}
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or entry.get("type") == "embedding":
            continue
        instances = entry.get("loaded_instances")
        instances = [i for i in instances if isinstance(i, dict)] if isinstance(instances, list) else []
        loaded_ctx = next(
            (
                positive_int(i["config"].get("context_length"))
                for i in instances
                if isinstance(i.get("config"), dict) and positive_int(i["config"].get("context_length"))
            ),
            None,
        )
        most = positive_int(entry.get("max_context_length"))
        caps = _obj(entry, "capabilities")
        window, source = _lmstudio_window(loaded_ctx, most)
        out[entry["key"]] = ModelInfo(
            entry["key"],
            LMSTUDIO,
            window,
            source,
            most,
            vision=_bool(caps.get("vision")),
            tools=_bool(caps.get("trained_for_tool_use")),
            loaded=bool(instances),
        )
    return out


def from_lmstudio_v0(payload: Any) -> dict[str, ModelInfo]:
    """LM Studio's ``/api/v0/models`` (0.3.6+): by model id."""
    out: dict[str, ModelInfo] = {}
    for entry in listed(payload):
        if entry.get("type") == "embeddings":
            continue
        most = positive_int(entry.get("max_context_length"))
        loaded = entry.get("state") == "loaded"
        window, source = _lmstudio_window(positive_int(entry.get("loaded_context_length")) if loaded else None, most)
        caps = entry.get("capabilities")
        out[entry["id"]] = ModelInfo(
            entry["id"],
            LMSTUDIO,
            window,
            source,
            most,
            vision=(entry.get("type") == "vlm") if entry.get("type") in ("vlm", "llm") else None,
            tools=("tool_use" in caps) if isinstance(caps, list) else None,
            loaded=loaded,
        )
    return out


def lmstudio_embeddings(payload: Any) -> set[str]:
    """The embedding models of either LM Studio list (not chat models: left out of the list)."""
    entries = payload.get("models") if isinstance(payload, dict) and "models" in payload else listed(payload)
    out = set()
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("type") in ("embedding", "embeddings"):
            name = entry.get("key", entry.get("id"))
            if isinstance(name, str):
                out.add(name)
    return out


def _lmstudio_window(loaded_ctx: int | None, most: int | None) -> tuple[int | None, str]:
    if loaded_ctx:
        return loaded_ctx, "loaded: LM Studio"
    if most:
        # LM Studio loads a model on the first request with the context length set in its app,
        # which is not told before: the model's own maximum is what is known.
        return most, "its maximum: LM Studio loads it with the length set in the app; not loaded yet"
    return None, ""


def from_llamacpp(entry: dict[str, Any], props: Any) -> ModelInfo:
    """llama-server's one model: ``n_ctx`` of ``/props`` (what ``-c`` allocated), else
    ``meta.n_ctx`` of ``/v1/models``; ``n_ctx_train`` is what the model was trained for."""
    meta = _obj(entry, "meta")
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    source = "llama.cpp /props n_ctx" if n_ctx else ""
    if n_ctx is None and positive_int(meta.get("n_ctx")):
        n_ctx, source = positive_int(meta.get("n_ctx")), "llama.cpp n_ctx"
    modalities = props.get("modalities") if isinstance(props, dict) else None
    vision = _bool(modalities.get("vision")) if isinstance(modalities, dict) else None
    trained = positive_int(meta.get("n_ctx_train"))
    return ModelInfo(entry["id"], LLAMACPP, n_ctx, source, trained, vision=vision, loaded=True)


def _obj(entry: Any, key: str) -> dict[str, Any]:
    """``entry[key]`` when it is a JSON object, else an empty one."""
    value = entry.get(key) if isinstance(entry, dict) else None
    return value if isinstance(value, dict) else {}


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None
