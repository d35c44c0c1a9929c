"""The request fits the window the model really runs with (stand-ins for Ollama, LM Studio, vLLM
and llama.cpp built from their documented answers), the server's cut is caught, capabilities
decide what is sent; an unknown server keeps today's behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import VaultEnv
from fake_openai import FakeOpenAI
from helpers import make_loop
from model_servers import CHAT_MODELS, STANDINS, OllamaStandin, Standin, prompt_size

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.context import TOOL_RULES
from tui_agent.core.store import location
from tui_agent.core.store.db import open_store
from tui_agent.core.vault import Vault, setup_logging

TURNS = 12
WORDS = "The quick brown fox jumps over the lazy dog while the river keeps running past the mill. "


def vault_env(tmp_path: Path, server: FakeOpenAI, chat_model: str, vision_model: str = "gemma3") -> VaultEnv:
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    _OPEN.append(open_store(location.resolve(vault.root)))
    profile = profiles.create_profile(
        "test",
        {
            "base_url": server.base_url,
            "api_key_env": "",
            "chat_model": chat_model,
            "vision_model": vision_model,
            "image_model": "flux2-test",
            "request_timeout_s": 10,
            "context_budget_tokens": 12000,  # the first profile's budget: three times the real window
        },
    )
    profiles.use_profile("test")
    return VaultEnv(vault, profile, server)


_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
def stores_closed() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


@pytest.fixture
def standin(request: pytest.FixtureRequest) -> Iterator[Standin]:
    server = STANDINS[request.param]().start()
    yield server
    server.stop()


async def long_conversation(env: VaultEnv, turns: int = TURNS) -> list[list[ev.Event]]:
    """Turns of ~1,000 characters each way (the issue's 12 turns held ~10,600 tokens)."""
    env.fake.default_text = WORDS * 11
    conversation = None
    seen = []
    for turn in range(turns):
        loop = make_loop(env)
        try:
            events = [e async for e in loop.run_turn(conversation, f"turn {turn}: " + WORDS * 11)]
        finally:
            await loop.aclose()
        conversation = next(e.conversation_id for e in events if isinstance(e, ev.TurnStarted))
        seen.append(events)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("standin", list(STANDINS), indirect=True)
async def test_a_long_conversation_always_fits_the_real_window(tmp_path, standin):
    model, window = CHAT_MODELS[standin.kind]
    env = vault_env(tmp_path, standin.fake, model)
    turns = await long_conversation(env)
    requests = env.fake.chat_requests
    assert len(requests) == TURNS
    assert standin.cuts == [] and max(standin.sizes) <= window, standin.sizes
    for number, request in enumerate(requests):
        assert request["messages"][0]["role"] == "system" and TOOL_RULES[:60] in request["messages"][0]["content"]
        assert request["messages"][-1] == {"role": "user", "content": f"turn {number}: " + WORDS * 11}
        assert request["tools"]  # the tools and their schemas survive too
    # Older turns left first, and the window marker says where the request starts.
    built = [e for e in turns[-1] if isinstance(e, ev.ContextBuilt)][-1]
    assert built.truncated and built.budget_tokens == window and built.estimated_tokens <= window
    firsts = [r["messages"][1]["content"] for r in requests]
    assert firsts[-1] != firsts[0]
    notices = [e for events in turns for e in events if isinstance(e, ev.ModelNotice)]
    assert notices == []  # it fitted: nothing to say


async def test_an_unknown_server_keeps_todays_behaviour(tmp_path, fake_llm):
    """The profile's budget alone: the same conversation grows past 4,096 tokens."""
    env = vault_env(tmp_path, fake_llm, "chat-model")
    await long_conversation(env, turns=8)
    sizes = [prompt_size(r) for r in fake_llm.chat_requests]
    assert max(sizes) > 4096 and all(r.get("tools") for r in fake_llm.chat_requests)


async def test_a_model_without_tools_gets_no_schemas_and_the_user_is_told_once(tmp_path):
    server = OllamaStandin().start()
    try:
        env = vault_env(tmp_path, server.fake, "gemma3", vision_model="gemma3")
        turns = await long_conversation(env, turns=2)
    finally:
        server.stop()
    assert all("tools" not in r for r in server.fake.chat_requests)
    notices = [e.text for events in turns for e in events if isinstance(e, ev.ModelNotice)]
    assert len(notices) == 1 and "gemma3 cannot call tools" in notices[0] and "tools need another" in notices[0]


async def test_a_window_too_small_for_the_tools_is_said_once_with_the_fix(tmp_path):
    server = OllamaStandin(context_length=1024).start()  # started without OLLAMA_CONTEXT_LENGTH, little VRAM
    try:
        env = vault_env(tmp_path, server.fake, "qwen3:8b")
        turns = await long_conversation(env, turns=3)
    finally:
        server.stop()
    notices = [e.text for events in turns for e in events if isinstance(e, ev.ModelNotice)]
    small = [n for n in notices if "leave almost no room" in n]
    assert len(small) == 1, notices
    assert "1,024-token window" in small[0] and "OLLAMA_CONTEXT_LENGTH=32768 ollama serve" in small[0]
    assert "num_ctx in a Modelfile" in small[0]
    # Even so the system prompt, the tools and the newest message are sent.
    last = server.fake.chat_requests[-1]
    assert last["messages"][0]["role"] == "system" and last["tools"]
    assert last["messages"][-1]["content"].startswith("turn 2: ")


class LyingOllama(OllamaStandin):
    """Reports a loaded window of 4,096 in /api/ps but runs with 1,024 (a server restarted
    with a smaller context between two questions): the reply's usage shows the cut."""

    def __init__(self) -> None:
        super().__init__()
        self.ps["models"].append({"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096})

    def window(self, model: str) -> int:
        return 1024


async def test_the_servers_cut_is_caught_from_usage_and_said_once(tmp_path):
    server = LyingOllama().start()
    try:
        env = vault_env(tmp_path, server.fake, "qwen3:8b")
        turns = await long_conversation(env, turns=4)
    finally:
        server.stop()
    assert server.cuts  # the stand-in cut the prompt
    notices = [e.text for events in turns for e in events if isinstance(e, ev.ModelNotice)]
    cut = [n for n in notices if n.startswith("the server cut the prompt")]
    assert len(cut) == 1, notices
    assert "read 1,024 tokens" in cut[0] and "OLLAMA_CONTEXT_LENGTH=32768 ollama serve" in cut[0]
