"""One model as the server describes it: the window it will really run with and what it can do."""

from __future__ import annotations

from typing import Any, NamedTuple

OLLAMA = "ollama"
LMSTUDIO = "lmstudio"
VLLM = "vllm"
LLAMACPP = "llamacpp"
OPENROUTER = "openrouter"
UNKNOWN = "unknown"

SERVER_NAMES = {
    OLLAMA: "Ollama",
    LMSTUDIO: "LM Studio",
    VLLM: "vLLM",
    LLAMACPP: "llama.cpp",
    OPENROUTER: "OpenRouter",
    UNKNOWN: "an OpenAI-compatible server",
}

# Ollama's documented default context length below 24 GiB of VRAM (32k for 24-48, 256k above),
# unless OLLAMA_CONTEXT_LENGTH is set. A client sees neither, so until the model is loaded (then
# /api/ps tells) the smallest is taken, and said so.
OLLAMA_DEFAULT_WINDOW = 4096


class ModelInfo(NamedTuple):
    """``window``: the context it will run with (None: unknown); ``window_source``: where that
    number comes from, for the user; ``max_window``: what the model was trained for. Capabilities
    are True/False when the server says, None when it does not."""

    id: str
    server: str = UNKNOWN
    window: int | None = None
    window_source: str = ""
    max_window: int | None = None
    vision: bool | None = None
    tools: bool | None = None
    thinking: bool | None = None
    loaded: bool | None = None

    @property
    def known(self) -> bool:
        """The server is one whose window is read (not an unknown OpenAI-compatible one)."""
        return self.server != UNKNOWN

    def to_json(self) -> dict[str, Any]:
        return dict(self._asdict())

    @classmethod
    def from_json(cls, raw: Any) -> ModelInfo | None:
        """A cached entry back, or None when it is not one (a damaged or older cache)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            return None
        values: dict[str, Any] = {}
        for name in cls._fields:
            value = raw.get(name, cls._field_defaults.get(name))
            if name in ("window", "max_window") and not (value is None or _positive_int(value)):
                return None
            if name in ("vision", "tools", "thinking", "loaded") and value not in (None, True, False):
                return None
            if name in ("id", "server", "window_source") and not isinstance(value, str):
                return None
            values[name] = value
        return cls(**values)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def positive_int(value: Any) -> int | None:
    """``value`` when it is a positive integer (JSON numbers like 4096.0 too), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else None


def capabilities_text(info: ModelInfo) -> str:
    """``vision, tools, thinking`` as far as known: ``-`` for a capability the model lacks, ``?``
    for one the server does not report."""
    parts = []
    for name in ("vision", "tools", "thinking"):
        value = getattr(info, name)
        parts.append(name if value else ("?" + name if value is None else "-" + name))
    return " ".join(parts)
