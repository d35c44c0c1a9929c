"""Capabilities the server reports decide what is sent: a chat model with vision gets the user's
images itself (``chat_accepts_images`` still overrides), a vision model without vision is warned
about; and the probe sends the API key only to a server that asks for it, caches to the vault."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fake_openai import png_bytes
from helpers import make_loop
from model_servers import OllamaStandin
from test_models_window import vault_env

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.models import catalog, probe
from tui_agent.core.vault import Vault


def image_parts(request) -> int:  # type: ignore[no-untyped-def]
    return sum(
        1
        for m in request["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )


async def turn(env, text: str) -> list[ev.Event]:  # type: ignore[no-untyped-def]
    loop = make_loop(env)
    try:
        return [e async for e in loop.run_turn(None, text)]
    finally:
        await loop.aclose()


class TwoQwens(OllamaStandin):
    """Also has qwen3:4b (the same documented /api/show answer: no vision)."""

    SHOWS = {**OllamaStandin.SHOWS, "qwen3:4b": "ollama_show_qwen3.json"}


async def test_a_chat_model_with_vision_gets_the_users_image_itself(tmp_path):
    server = OllamaStandin().start()
    try:
        env = vault_env(tmp_path, server.fake, "gemma3", vision_model="qwen3:8b")
        (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
        events = await turn(env, "/attach media/uploads/a.png what is this")
    finally:
        server.stop()
    (request,) = server.fake.chat_requests
    assert request["model"] == "gemma3" and image_parts(request) == 1  # no switch to the vision model
    assert not [e for e in events if isinstance(e, ev.ModelSwitched)]


async def test_chat_accepts_images_no_still_wins(tmp_path):
    server = OllamaStandin().start()
    try:
        env = vault_env(tmp_path, server.fake, "gemma3", vision_model="qwen3:8b")
        profiles.set_field(env.profile, "chat_accepts_images", "no")
        (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
        await turn(env, "/attach media/uploads/a.png what is this")
    finally:
        server.stop()
    assert server.fake.chat_requests[0]["model"] == "qwen3:8b"


async def test_a_vision_model_without_vision_is_warned_about_once(tmp_path):
    server = TwoQwens().start()
    try:
        env = vault_env(tmp_path, server.fake, "qwen3:8b", vision_model="qwen3:4b")
        (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
        first = await turn(env, "/attach media/uploads/a.png what is this")
        second = await turn(env, "/attach media/uploads/a.png and this?")
    finally:
        server.stop()
    warned = [e.text for e in first + second if isinstance(e, ev.ModelNotice)]
    assert len(warned) == 1 and warned[0].startswith("vision_model qwen3:4b cannot see images")
    assert "set vision_model to a model with vision" in warned[0]


def test_the_key_goes_only_to_a_server_that_asks_for_it(fake_llm):
    def models(body):  # type: ignore[no-untyped-def]
        if fake_llm.headers[-1].get("Authorization") != "Bearer sk-probe":
            return 401, {"error": {"message": "a key is needed"}}
        return 200, {"object": "list", "data": [{"id": "m", "owned_by": "vllm", "max_model_len": 8192}]}

    fake_llm.routes["GET", "/v1/models"] = models
    found = probe.probe(fake_llm.base_url, "sk-probe")
    assert found.error is None and found.find("m").window == 8192
    assert [h.get("Authorization") for h in fake_llm.headers] == [None, "Bearer sk-probe"]


def test_a_server_that_needs_no_key_is_never_sent_it(fake_llm):
    found = probe.probe(fake_llm.base_url, "sk-probe")
    assert found.error is None and found.server == "unknown" and [m.id for m in found.models] == ["fake-chat"]
    assert all("Authorization" not in h for h in fake_llm.headers)


def test_a_server_that_hangs_is_one_line_not_a_stall(fake_llm, monkeypatch):
    monkeypatch.setattr(probe, "REQUEST_TIMEOUT_S", 0.3)

    def slow(body):  # type: ignore[no-untyped-def]
        time.sleep(2)
        return 200, {"data": []}

    fake_llm.routes["GET", "/v1/models"] = slow
    found = probe.probe(fake_llm.base_url)
    assert found.error == f"{fake_llm.base_url} did not answer the model questions in time"


def test_what_was_learned_is_kept_in_the_vault_and_read_back(tmp_path):
    server = OllamaStandin().start()
    try:
        env = vault_env(tmp_path, server.fake, "qwen3:8b")
        catalog.refresh(env.profile, env.vault)
    finally:
        server.stop()
    saved = json.loads(catalog.cache_path(env.vault).read_text())
    assert [m["id"] for m in saved["endpoints"][server.base_url]["models"]] == ["qwen3:8b", "gemma3:latest"]
    catalog.clear()
    catalog.load(env.vault)
    assert catalog.cached_info(server.base_url, "gemma3").window == 4096  # "gemma3" is Ollama's gemma3:latest
    catalog.clear()
    catalog.cache_path(env.vault).write_text("{not json")
    catalog.load(env.vault)  # a damaged cache is no error
    assert catalog.cached(server.base_url) is None


def test_a_cache_that_is_not_there_is_no_error(tmp_path: Path):
    catalog.load(Vault(tmp_path / "v").init())


def test_an_ollama_whose_models_list_does_not_say_so_is_known_by_its_own_endpoints(fake_llm):
    from model_servers import fixture

    fake_llm.routes["GET", "/api/version"] = lambda body: (200, {"version": "0.12.6"})
    fake_llm.routes["GET", "/api/ps"] = lambda body: (200, fixture("ollama_ps.json"))
    fake_llm.routes["POST", "/api/show"] = lambda body: (200, fixture("ollama_show_qwen3.json"))
    found = probe.probe(fake_llm.base_url, want=["fake-chat"])
    assert found.server == "ollama"
    assert found.find("fake-chat").tools is True and found.find("fake-chat").window == 4096


def test_the_users_own_question_waits_longer_than_the_apps_background_check(fake_llm, monkeypatch):
    """`tui-agent models` is asked by the user, who waits for it: a server slower than the app's
    background check (a local server busy generating, a loaded machine) still answers it."""
    monkeypatch.setattr(probe, "REQUEST_TIMEOUT_S", 0.3)

    def slow(body):  # type: ignore[no-untyped-def]
        time.sleep(0.6)
        return 200, {"data": [{"id": "m1", "object": "model"}]}

    fake_llm.routes["GET", "/v1/models"] = slow
    assert probe.probe(fake_llm.base_url).error == f"{fake_llm.base_url} did not answer the model questions in time"
    asked = probe.probe(fake_llm.base_url, asked=True)
    assert asked.error is None and [m.id for m in asked.models] == ["m1"]
