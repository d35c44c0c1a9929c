"""``tui-agent models`` and ``tui-agent ask`` against stand-ins built from the servers' documented
answers, as a user runs them (real subprocesses, the real openai client)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv
from model_servers import STANDINS, OllamaStandin, Standin

from tui_agent.core import profiles
from tui_agent.core.context import TOOL_RULES
from tui_agent.core.store import open_database
from tui_agent.core.vault import Vault

WORDS = "The quick brown fox jumps over the lazy dog while the river keeps running past the mill. "


def make_vault(tmp_path: Path, base_url: str, chat: str, vision: str) -> Path:
    vault = Vault(tmp_path / "vault").init()
    db = open_database(vault.db_path)
    profiles.create_profile(
        "p",
        {
            "base_url": base_url,
            "api_key_env": "",
            "chat_model": chat,
            "vision_model": vision,
            "image_model": "flux2-test",
            "request_timeout_s": 10,
            "context_budget_tokens": 12000,
        },
    )
    profiles.use_profile("p")
    db.close()
    return vault.root


def run(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), *args, "--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.fixture
def ollama() -> Iterator[Standin]:
    server = OllamaStandin().start()
    yield server
    server.stop()


@pytest.mark.slow
def test_models_lists_the_real_windows_capabilities_and_the_profiles_choice(tmp_path, ollama):
    vault = make_vault(tmp_path, ollama.base_url, "qwen3:8b", "gemma3")
    result = run(vault, "models")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Ollama at {ollama.base_url}"
    qwen = next(line for line in lines if line.strip().startswith("qwen3:8b"))
    gemma = next(line for line in lines if line.strip().startswith("gemma3:latest"))
    assert "4,096" in qwen and "-vision tools thinking" in qwen and qwen.endswith("chat")
    assert "4,096" in gemma and "vision -tools -thinking" in gemma and gemma.endswith("vision")
    assert "window of qwen3:8b: assumed: Ollama's default below 24 GiB of VRAM" in result.stdout
    assert "window of gemma3:latest: loaded: Ollama /api/ps" in result.stdout
    listed = json.loads(run(vault, "models", "--json").stdout)
    assert listed["server"] == "ollama"
    assert {m["id"]: (m["window"], m["used_for"]) for m in listed["models"]} == {
        "qwen3:8b": (4096, "chat"),
        "gemma3:latest": (4096, "vision"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lmstudio", "vllm", "llamacpp"])
def test_models_on_lm_studio_vllm_and_llamacpp(tmp_path, kind):
    server = STANDINS[kind]().start()
    try:
        vault = make_vault(tmp_path, server.base_url, "qwen3-8b", "gemma-3-4b-it")
        result = run(vault, "models", "--json")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    windows = {m["id"]: m["window"] for m in json.loads(result.stdout)["models"]}
    expected = {
        "lmstudio": {"gemma-3-4b-it": 4096, "qwen3-8b": 4096},
        "vllm": {"Qwen/Qwen3-8B": 4096},
        "llamacpp": {"../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf": 4096},
    }[kind]
    assert windows == expected


def test_models_warns_of_a_vision_model_without_vision(tmp_path, ollama):
    vault = make_vault(tmp_path, ollama.base_url, "gemma3", "qwen3:8b")
    result = run(vault, "models")
    assert result.returncode == 0
    assert "warning: vision_model qwen3:8b cannot see images: choose one with vision" in result.stderr
    assert "warning: chat_model gemma3 cannot call tools" in result.stderr


def test_models_of_a_server_that_is_not_there_is_one_line(tmp_path):
    vault = make_vault(tmp_path, "http://127.0.0.1:9/v1", "qwen3", "gemma3")
    result = run(vault, "models")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == "error: cannot reach http://127.0.0.1:9/v1 (ConnectError)"


@pytest.mark.slow
def test_ask_a_long_conversation_always_fits_and_the_system_prompt_is_first(tmp_path, ollama):
    vault = make_vault(tmp_path, ollama.base_url, "qwen3:8b", "gemma3")
    ollama.fake.default_text = WORDS * 22
    for turn in range(6):
        result = run(vault, "ask", f"turn {turn}: " + WORDS * 22)
        assert result.returncode == 0, result.stderr
        assert "cut the prompt" not in result.stderr and "⚠" not in result.stderr
    assert ollama.cuts == [] and max(ollama.sizes) <= 4096, ollama.sizes
    for turn, request in enumerate(ollama.fake.chat_requests):
        assert request["messages"][0]["role"] == "system" and TOOL_RULES[:60] in request["messages"][0]["content"]
        assert request["messages"][-1]["content"] == f"turn {turn}: " + WORDS * 22
    cached = json.loads((vault / "cache" / "models.json").read_text())
    assert cached["endpoints"][ollama.base_url]["server"] == "ollama"
