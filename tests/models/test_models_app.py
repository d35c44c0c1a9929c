"""The app against the Ollama stand-in: the model picker (palette and sidebar) shows the real
windows and what each model can do, choosing sets the profile field; a long conversation typed in
the app always fits the window, and the window marker shows where the request starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from model_servers import OllamaStandin
from pilot_helpers import make, send, settle, until
from textual.widgets import Button, OptionList

from tui_agent.core import profiles
from tui_agent.core.store import location
from tui_agent.core.store.db import open_store
from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault, setup_logging
from tui_agent.ui.screens.model_picker import ModelPicker

WORDS = "The quick brown fox jumps over the lazy dog while the river keeps running past the mill. "


class Env:
    def __init__(self, vault: Vault, profile: Profile, fake) -> None:  # type: ignore[no-untyped-def]
        self.vault, self.profile, self.fake = vault, profile, fake


@pytest.fixture
def ollama_env(tmp_path: Path) -> Iterator[tuple[Env, OllamaStandin]]:
    server = OllamaStandin().start()
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    db = open_store(location.resolve(vault.root))
    profile = profiles.create_profile(
        "test",
        {
            "base_url": server.base_url,
            "api_key_env": "",
            "chat_model": "qwen3:8b",
            "vision_model": "gemma3",
            "image_model": "flux2-test",
            "request_timeout_s": 10,
            "context_budget_tokens": 12000,
        },
    )
    profiles.use_profile("test")
    yield Env(vault, profile, server.fake), server
    db.close()
    server.stop()


async def picker_rows(app, pilot) -> list[str]:  # type: ignore[no-untyped-def]
    def listed() -> bool:
        if not isinstance(app.screen, ModelPicker):
            return False
        options, status = app.screen.query(OptionList), app.screen.query("#models-status")
        return (
            bool(options and status) and options.first().option_count == 2 and "models" in str(status.first().render())
        )

    await until(pilot, listed, what="the picker never listed the server's two models")
    options = app.screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_picker_lists_real_windows_and_choosing_sets_the_field(ollama_env):
    env, _server = ollama_env
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.run_action("choose_model")
        qwen, gemma = await picker_rows(app, pilot)
        assert qwen.startswith("qwen3:8b") and "4,096" in qwen and "-vision tools thinking" in qwen
        assert qwen.endswith("[chat]")
        assert gemma.startswith("gemma3:latest") and "4,096" in gemma and "vision -tools" in gemma
        assert gemma.endswith("[vision]")
        assert "Ollama at " in str(app.screen.query_one("#models-title").render())
        await pilot.press("down", "c")  # gemma3 becomes the chat model
        for _ in range(200):
            await pilot.pause(0.05)
            if Profile.get_by_id(env.profile.id).chat_model == "gemma3:latest":
                break
        assert Profile.get_by_id(env.profile.id).chat_model == "gemma3:latest"
        assert not isinstance(app.screen, ModelPicker)


async def test_the_sidebar_opens_the_picker_and_v_sets_the_vision_model(ollama_env):
    env, _server = ollama_env
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.run_action("toggle_sidebar")
        await pilot.pause()
        app.query_one("#choose-model", Button).press()
        rows = await picker_rows(app, pilot)
        assert rows[0].startswith("qwen3:8b")
        await pilot.press("v")
        for _ in range(200):
            await pilot.pause(0.05)
            if Profile.get_by_id(env.profile.id).vision_model == "qwen3:8b":
                break
        assert Profile.get_by_id(env.profile.id).vision_model == "qwen3:8b"
        # The sidebar shows the new value.
        assert app.query_one("#field-vision_model").value == "qwen3:8b"


@pytest.mark.slow
async def test_a_long_conversation_in_the_app_always_fits(ollama_env):
    env, server = ollama_env
    server.fake.default_text = WORDS * 11
    app = make(env, check_endpoint=True)  # the app asks the server at start, in a worker
    async with app.run_test(size=(120, 40)) as pilot:
        for turn in range(10):
            await send(app, pilot, f"turn {turn}: " + WORDS * 11)
        await settle(app, pilot)
        assert app.conversation_view.chat_log.query(".window-marker")  # older turns left the request
        assert not app.conversation_view.chat_log.query(".model-notice")
    assert server.cuts == [] and max(server.sizes) <= 4096, server.sizes
    for turn, request in enumerate(server.fake.chat_requests):
        assert request["messages"][0]["role"] == "system"
        assert request["messages"][-1]["content"] == (f"turn {turn}: " + WORDS * 11).rstrip()


async def test_a_model_without_tools_is_said_once_in_the_chat(ollama_env):
    env, server = ollama_env
    profiles.set_field(env.profile, "chat_model", "gemma3")
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "hello")
        await send(app, pilot, "again")
        (card,) = app.conversation_view.chat_log.query(".model-notice")
        assert str(card.render()).startswith("⚠ gemma3 cannot call tools")
    assert all("tools" not in r for r in server.fake.chat_requests)
