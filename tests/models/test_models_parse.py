"""Each server's documented answer (tests/fixtures/models/) read into the window and capabilities."""

from __future__ import annotations

from model_servers import fixture

from tui_agent.core.models import parse
from tui_agent.core.models.info import LLAMACPP, LMSTUDIO, OLLAMA, OPENROUTER, UNKNOWN, VLLM, ModelInfo


def test_the_server_is_told_by_its_v1_models_answer():
    kinds = {
        "ollama_v1_models.json": OLLAMA,
        "lmstudio_v1_models_openai.json": LMSTUDIO,
        "vllm_v1_models.json": VLLM,
        "llamacpp_v1_models.json": LLAMACPP,
        "openrouter_models.json": OPENROUTER,
    }
    for name, kind in kinds.items():
        assert parse.server_kind(parse.listed(fixture(name))) == kind, name
    plain = {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "owned_by": "system"}]}
    assert parse.server_kind(parse.listed(plain)) == UNKNOWN


def test_ollama_a_loaded_model_runs_with_the_context_api_ps_reports():
    loaded = parse.ollama_loaded(fixture("ollama_ps.json"))
    assert loaded == {"gemma3:latest": 4096}
    info = parse.from_ollama("gemma3", fixture("ollama_show_gemma3.json"), loaded)
    # /api/ps's 4,096 wins over the Modelfile's num_ctx 2048 and the model's own 131,072.
    assert (info.window, info.max_window, info.loaded) == (4096, 131072, True)
    assert (info.vision, info.tools, info.thinking) == (True, False, False)
    assert "loaded" in info.window_source


def test_ollama_before_loading_num_ctx_of_the_modelfile_or_the_documented_default():
    gemma = parse.from_ollama("gemma3", fixture("ollama_show_gemma3.json"), {})
    assert (gemma.window, gemma.loaded) == (2048, False) and "num_ctx" in gemma.window_source
    qwen = parse.from_ollama("qwen3:8b", fixture("ollama_show_qwen3.json"), {})
    # No num_ctx, not loaded: Ollama's documented default below 24 GiB of VRAM, and the app says so.
    assert (qwen.window, qwen.max_window) == (4096, 40960)
    assert "assumed" in qwen.window_source and "OLLAMA_CONTEXT_LENGTH" in qwen.window_source
    assert (qwen.vision, qwen.tools, qwen.thinking) == (False, True, True)


def test_ollama_window_never_exceeds_the_models_own_length():
    show = {"model_info": {"general.architecture": "tiny", "tiny.context_length": 2048}, "capabilities": []}
    info = parse.from_ollama("tiny", show, {"tiny:latest": 8192})
    assert info.window == 2048


def test_lmstudio_v0_loaded_context_length_and_type():
    found = parse.from_lmstudio_v0(fixture("lmstudio_api_v0_models.json"))
    assert set(found) == {"gemma-3-4b-it", "qwen3-8b"}  # the embedding model is not a chat model
    gemma = found["gemma-3-4b-it"]
    assert (gemma.window, gemma.max_window, gemma.vision, gemma.loaded) == (4096, 131072, True, True)
    assert found["qwen3-8b"].tools is True and found["qwen3-8b"].vision is False
    assert parse.lmstudio_embeddings(fixture("lmstudio_api_v0_models.json")) == {"text-embedding-nomic-embed-text-v1.5"}


def test_lmstudio_v1_loaded_instances_and_capabilities():
    found = parse.from_lmstudio_v1(fixture("lmstudio_api_v1_models.json"))
    assert list(found) == ["gemma-3-270m-it-qat"]
    info = found["gemma-3-270m-it-qat"]
    assert (info.window, info.max_window, info.vision, info.tools) == (4096, 32768, False, False)


def test_lmstudio_a_model_not_loaded_is_known_by_its_maximum_and_says_so():
    payload = {"data": [{"id": "m", "type": "llm", "state": "not-loaded", "max_context_length": 32768}]}
    info = parse.from_lmstudio_v0(payload)["m"]
    assert (info.window, info.loaded) == (32768, False) and "not loaded" in info.window_source


def test_vllm_max_model_len():
    (entry,) = parse.listed(fixture("vllm_v1_models.json"))
    info = parse.from_vllm(entry)
    assert (info.id, info.window, info.server) == ("Qwen/Qwen3-8B", 4096, VLLM)
    assert (info.vision, info.tools) == (None, None)  # vLLM does not say


def test_llamacpp_n_ctx_of_props_not_the_trained_length():
    (entry,) = parse.listed(fixture("llamacpp_v1_models.json"))
    info = parse.from_llamacpp(entry, fixture("llamacpp_props.json"))
    assert (info.window, info.max_window) == (4096, 131072)
    router = parse.from_llamacpp(entry, {"default_generation_settings": {"n_ctx": 0}})
    assert router.window is None  # llama-server's router mode answers a placeholder 0: unknown, not 0


def test_openrouter_context_length_modalities_and_parameters():
    (entry,) = parse.listed(fixture("openrouter_models.json"))
    info = parse.from_openrouter(entry)
    assert (info.window, info.vision, info.tools, info.thinking) == (8192, False, True, False)


def test_a_cached_entry_comes_back_and_a_damaged_one_is_refused():
    info = ModelInfo("m", OLLAMA, 4096, "loaded", 40960, True, False, None, True)
    assert ModelInfo.from_json(info.to_json()) == info
    assert ModelInfo.from_json({"id": "m", "window": -3}) is None
    assert ModelInfo.from_json({"id": "m", "vision": "yes"}) is None
    assert ModelInfo.from_json(["m"]) is None
