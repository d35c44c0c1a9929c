"""Loopback stand-ins for Ollama, LM Studio, vLLM and llama.cpp, built from their documented
answers (tests/fixtures/models/, each naming its source) on top of tests/fake_openai.py.

Each serves its ``/v1/models`` and its own model endpoints, streams chat replies through the
OpenAI-compatible endpoint, and behaves like the real server with a prompt longer than the model's
window: it cuts it from the front and reports ``usage.prompt_tokens`` of what it kept (the window).
Its tokenizer is a simple one (4 characters a token); every prompt size it saw is recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fake_openai import FakeOpenAI

FIXTURES = Path(__file__).parent / "fixtures" / "models"


def fixture(name: str) -> Any:
    """A fixture's JSON body (its ``#`` header lines name the source)."""
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return json.loads("\n".join(line for line in lines if not line.startswith("#")))


def prompt_size(body: dict[str, Any]) -> int:
    """The stand-in's count of a chat request: its text and tool schemas, 4 characters a token."""
    chars = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        chars += len(json.dumps(message.get("tool_calls") or ""))
    return chars // 4 + len(json.dumps(body["tools"])) // 4 if body.get("tools") else chars // 4


class Standin:
    """One server: ``fake`` is the running FakeOpenAI; ``window(model)`` what a model runs with."""

    kind = ""

    def __init__(self) -> None:
        self.fake = FakeOpenAI()
        self.sizes: list[int] = []  # what each chat request held, by the stand-in's count
        self.cuts: list[int] = []  # those longer than the window (cut from the front)
        self.fake.prompt_tokens = self._usage
        self.routes()

    def routes(self) -> None:
        raise NotImplementedError

    def window(self, model: str) -> int:
        raise NotImplementedError

    def _usage(self, body: dict[str, Any]) -> int:
        size = prompt_size(body)
        self.sizes.append(size)
        window = self.window(body.get("model", ""))
        if size > window:
            self.cuts.append(size)
            return window  # the server kept what fits
        return size

    def _get(self, path: str, payload: Any) -> None:
        self.fake.routes["GET", path] = lambda body: (200, payload)

    def start(self) -> Standin:
        self.fake.start()
        return self

    def stop(self) -> None:
        self.fake.stop()

    @property
    def base_url(self) -> str:
        return self.fake.base_url


class OllamaStandin(Standin):
    """Ollama: a model is loaded by its first chat request, with its Modelfile's num_ctx or the
    server's context length (4,096 below 24 GiB of VRAM unless OLLAMA_CONTEXT_LENGTH is set)."""

    kind = "ollama"
    SHOWS = {"qwen3:8b": "ollama_show_qwen3.json", "gemma3:latest": "ollama_show_gemma3.json"}

    def __init__(self, context_length: int = 4096) -> None:
        self.context_length = context_length
        self.ps = fixture("ollama_ps.json")
        super().__init__()

    def routes(self) -> None:
        self._get("/v1/models", fixture("ollama_v1_models.json"))
        self._get("/api/version", {"version": "0.12.6"})
        self.fake.routes["GET", "/api/ps"] = lambda body: (200, self.ps)
        self.fake.routes["POST", "/api/show"] = self._show

    def _full(self, name: str) -> str:
        return name if ":" in name else name + ":latest"

    def _show(self, body: dict[str, Any]) -> tuple[int, Any]:
        name = self._full(str(body.get("model", "")))
        if name not in self.SHOWS:
            return 404, {"error": f"model '{body.get('model')}' not found"}
        return 200, fixture(self.SHOWS[name])

    def _num_ctx(self, name: str) -> int | None:
        found = re.search(r"num_ctx\s+(\d+)", fixture(self.SHOWS[name]).get("parameters", ""))
        return int(found.group(1)) if found else None

    def window(self, model: str) -> int:
        name = self._full(model)
        for entry in self.ps["models"]:
            if self._full(entry["model"]) == name:
                return int(entry["context_length"])
        window = self._num_ctx(name) or self.context_length
        self.ps["models"].append({"name": name, "model": name, "context_length": window, "size_vram": 1})
        return window


class LMStudioStandin(Standin):
    kind = "lmstudio"

    def routes(self) -> None:
        self._get("/v1/models", fixture("lmstudio_v1_models_openai.json"))
        self._get("/api/v0/models", fixture("lmstudio_api_v0_models.json"))

    def window(self, model: str) -> int:
        for entry in fixture("lmstudio_api_v0_models.json")["data"]:
            if entry["id"] == model:
                return int(entry.get("loaded_context_length") or entry["max_context_length"])
        return 4096


class VLLMStandin(Standin):
    kind = "vllm"

    def routes(self) -> None:
        self._get("/v1/models", fixture("vllm_v1_models.json"))

    def window(self, model: str) -> int:
        return int(fixture("vllm_v1_models.json")["data"][0]["max_model_len"])


class LlamaCppStandin(Standin):
    kind = "llamacpp"

    def routes(self) -> None:
        self._get("/v1/models", fixture("llamacpp_v1_models.json"))
        self._get("/props", fixture("llamacpp_props.json"))

    def window(self, model: str) -> int:
        return int(fixture("llamacpp_props.json")["default_generation_settings"]["n_ctx"])


# The chat model each stand-in is used with in the tests, and the window it really runs with.
CHAT_MODELS = {
    "ollama": ("qwen3:8b", 4096),
    "lmstudio": ("qwen3-8b", 4096),
    "vllm": ("Qwen/Qwen3-8B", 4096),
    "llamacpp": ("../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4096),
}
STANDINS: dict[str, type[Standin]] = {
    "ollama": OllamaStandin,
    "lmstudio": LMStudioStandin,
    "vllm": VLLMStandin,
    "llamacpp": LlamaCppStandin,
}
