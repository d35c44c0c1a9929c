"""Recorded-style streams of real providers replayed over HTTP through the real openai client and AgentLoop.

Each case names a fixture in ``tests/fixtures/streams/`` (its header names the documented source)
and asserts the assembled tool calls, the stored rows (content, reasoning, status) and the
requests that went out (how many, and what they carried).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from helpers import done, rows
from sse_replay import ReplayServer

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.llm import LLMClient
from tui_agent.core.loop import AgentLoop
from tui_agent.core.store import open_database
from tui_agent.core.store.models import Profile
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.vault import Vault, setup_logging


class _Recording(Tool):
    calls: ClassVar[list[dict[str, Any]]] = []
    description = "test tool"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        _Recording.calls.append({"tool": self.name, **arguments})
        return ToolResult.ok({"result": f"{self.name} ran"})


class GetWeather(_Recording):
    name = "get_weather"
    role = "weather_tool"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "City."}},
        "required": ["location"],
    }


class WebSearch(_Recording):
    name = "web_search"
    role = "web_search"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Query."}},
        "required": ["query"],
    }


class Env:
    def __init__(self, vault: Vault, profile: Profile, replay: ReplayServer) -> None:
        self.vault = vault
        self.profile = profile
        self.replay = replay

    async def turn(self, text: str = "hi", conversation_id: int | None = None) -> list[Any]:
        client = LLMClient(self.replay.base_url, "test-key", timeout=5, backoff_s=0.01)
        loop = AgentLoop(self.vault, self.profile, ToolRegistry([GetWeather(), WebSearch()]), client=client)
        try:
            return [e async for e in loop.run_turn(conversation_id, text)]
        finally:
            await loop.aclose()

    def messages(self) -> list[tuple[Any, ...]]:
        return rows(
            self.vault.db_path,
            "SELECT role, content, reasoning, status, tool_calls, tool_name FROM messages ORDER BY id",
        )


@pytest.fixture
def penv(tmp_path: Path) -> Iterator[Env]:
    replay = ReplayServer().start()
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    db = open_database(vault.db_path)
    profile = profiles.create_profile(
        "replay",
        {
            "base_url": replay.base_url,
            "api_key_env": "",
            "chat_model": "chat-model",
            "vision_model": "vision-model",
            "image_model": "flux2-test",
            "request_timeout_s": 5,
        },
    )
    _Recording.calls.clear()
    yield Env(vault, profile, replay)
    db.close()
    replay.stop()


def _calls(stored: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [c for r in stored if r[0] == "assistant" and r[4] for c in json.loads(r[4])]


TOOL_CASES = [
    ("openai_args_split.sse", [("get_weather", {"location": "Paris, France"})], "", ""),
    (
        "openai_parallel_interleaved.sse",
        [("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Tokyo"})],
        "",
        "",
    ),
    (
        "groq_whole_call_reasoning.sse",
        [("get_weather", {"location": "Berlin"})],
        "",
        "The user wants the weather in Berlin; I should call get_weather.",
    ),
    (
        "gemini_no_index_signature.sse",
        [("get_weather", {"location": "Paris"}), ("get_weather", {"location": "London"})],
        "",
        "",
    ),
    ("openrouter_repeated_id_name.sse", [("web_search", {"query": "python 3.14"})], "", "Search first."),
    ("ollama_stop_with_calls.sse", [("get_weather", {"location": "Oslo"})], "", ""),
    ("xai_reasoning_whole_call.sse", [("get_weather", {"location": "Austin"})], "Checking.", "Need the weather tool."),
    ("zai_glm_reasoning_calls.sse", [("get_weather", {"location": "Beijing"})], "", "Look up the weather."),
]


@pytest.mark.parametrize(("fixture", "expected", "content", "reasoning"), TOOL_CASES)
async def test_tool_call_shapes_run_the_right_tools_once(penv, fixture, expected, content, reasoning):
    penv.replay.script(fixture)
    events = await penv.turn("weather?")
    assert done(events).status == "complete"
    started = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ev.ToolStarted)]
    assert started == expected
    assert [(c.pop("tool"), c) for c in _Recording.calls] == expected
    stored = penv.messages()
    assert [(r[0], r[3]) for r in stored] == [("user", "complete"), ("assistant", "complete")] + [
        (GetWeather.role if name == "get_weather" else WebSearch.role, "complete") for name, _ in expected
    ] + [("assistant", "complete")]
    first = stored[1]
    assert first[1] == content and (first[2] or "") == reasoning
    assert [(c["name"], json.loads(c["arguments"])) for c in _calls(stored)] == expected
    assert stored[-1][1] == "All done."
    # Exactly two requests: the tool round and the answer after it; no reasoning sent back.
    assert len(penv.replay.requests) == 2
    follow_up = penv.replay.bodies[1]["messages"]
    sent_calls = [m for m in follow_up if m["role"] == "assistant" and m.get("tool_calls")]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in sent_calls[0]["tool_calls"]] == (
        expected
    )
    assert all("reasoning" not in m and "reasoning_content" not in m for m in follow_up)
    assert [m["tool_call_id"] for m in follow_up if m["role"] == "tool"] == [
        c["id"] for c in sent_calls[0]["tool_calls"]
    ]
    assert len({c["id"] for c in sent_calls[0]["tool_calls"]}) == len(expected)


async def test_usage_is_read_from_the_final_chunk_and_from_x_groq(penv):
    penv.replay.script("openai_args_split.sse", "after_tool.sse", "groq_whole_call_reasoning.sse")
    events = await penv.turn("weather?")
    finished = [e for e in events if isinstance(e, ev.AssistantFinished)]
    assert (finished[0].prompt_tokens, finished[0].completion_tokens) == (61, 16)
    events = await penv.turn("again", done(events).conversation_id)
    finished = [e for e in events if isinstance(e, ev.AssistantFinished)]
    assert (finished[0].prompt_tokens, finished[0].completion_tokens) == (210, 41)


async def test_gemini_thought_signature_is_stored_and_sent_back_unchanged(penv):
    penv.replay.script("gemini_no_index_signature.sse")
    await penv.turn("weather in Paris and London?")
    first, second = _calls(penv.messages())
    assert first["id"] == "function-call-5f1a" and second["id"] == "function-call-9c2e"
    assert first["extra"] == {"extra_content": {"google": {"thought_signature": "CiQBVKhc7vB+sigA=="}}}
    assert "extra" not in second
    sent = next(m for m in penv.replay.bodies[1]["messages"] if m.get("tool_calls"))["tool_calls"]
    assert sent[0]["extra_content"] == {"google": {"thought_signature": "CiQBVKhc7vB+sigA=="}}
    assert sent[0]["id"] == "function-call-5f1a" and "extra_content" not in sent[1]


REASONING_CASES = [
    ("deepseek_reasoning_content.sse", "9.8 is greater.", "9.11 vs 9.8: compare tenths, 1 < 8."),
    ("vllm_reasoning.sse", "Hello!", "Greet back briefly."),
    ("mistral_magistral_parts.sse", "The answer is 4.", "Two plus two is four."),
    ("together_think_tags.sse", "Hi there!", "The user says hi."),
    ("llamacpp_unopened_think.sse", "Hello! How can I help?", "Okay, the user greets me."),
    ("azure_filter_results.sse", "Hello from Azure.", ""),
    ("done_without_finish_reason.sse", "Complete answer.", ""),
    ("keepalive_empty_events.sse", "Still here.", ""),
]


@pytest.mark.parametrize(("fixture", "content", "reasoning"), REASONING_CASES)
async def test_reasoning_is_kept_apart_from_the_answer(penv, fixture, content, reasoning):
    penv.replay.script(fixture)
    events = await penv.turn("question")
    assert done(events).status == "complete"
    stored = penv.messages()
    assert [(r[0], r[1], r[2] or "", r[3]) for r in stored] == [
        ("user", "question", "", "complete"),
        ("assistant", content, reasoning, "complete"),
    ]
    finished = next(e for e in events if isinstance(e, ev.AssistantFinished))
    assert finished.text == content and finished.reasoning == reasoning
    # What the user saw live adds up to the same split.
    shown, thought = "", ""
    for event in events:
        if isinstance(event, ev.TextDelta):
            shown += event.text
        elif isinstance(event, ev.ReasoningDelta):
            thought += event.text
        elif isinstance(event, ev.TextToReasoning):
            shown, thought = "", event.text + thought
    assert shown.strip() == content and thought.strip() == reasoning
    assert len(penv.replay.requests) == 1
    # The next turn never sends reasoning back (DeepSeek rejects it) nor <think> text.
    await penv.turn("next", done(events).conversation_id)
    history = penv.replay.bodies[1]["messages"]
    assistant = [m for m in history if m["role"] == "assistant"]
    assert assistant == [{"role": "assistant", "content": content}]
    if reasoning:
        assert reasoning not in json.dumps(penv.replay.bodies[1])


async def test_midstream_transient_error_keeps_partial_and_is_retried_once(penv):
    penv.replay.script("openrouter_midstream_transient.sse", "after_tool.sse")
    events = await penv.turn("hi")
    assert done(events).status == "complete"
    stored = penv.messages()
    assert [(r[0], r[1], r[3]) for r in stored] == [
        ("user", "hi", "complete"),
        ("assistant", "The first half of ", "error"),
        ("assistant", "All done.", "complete"),
    ]
    assert len(penv.replay.requests) == 2
    assert penv.replay.bodies[0] == penv.replay.bodies[1]  # the same request, not a changed context
    log = [penv.vault.log_file]
    assert any("Provider disconnected unexpectedly" in p.read_text() for p in log)


async def test_midstream_4xx_error_keeps_partial_and_is_not_retried(penv):
    penv.replay.script("vllm_midstream_validation_error.sse")
    events = await penv.turn("hi")
    assert done(events).status == "error"
    (error,) = [e for e in events if isinstance(e, ev.ErrorEvent)]
    assert "maximum context length is 32768 tokens" in error.message and "\n" not in error.message
    assert [(r[0], r[1], r[3]) for r in penv.messages()] == [
        ("user", "hi", "complete"),
        ("assistant", "Partial ", "error"),
        ("error", error.message, "error"),
    ]
    assert len(penv.replay.requests) == 1


async def test_error_before_any_output_in_a_200_stream_is_retried(penv):
    penv.replay.script("first_event_error_overloaded.sse", "after_tool.sse")
    events = await penv.turn("hi")
    assert done(events).status == "complete"
    assert [(r[0], r[1], r[3]) for r in penv.messages()] == [
        ("user", "hi", "complete"),
        ("assistant", "All done.", "complete"),
    ]
    assert len(penv.replay.requests) == 2


async def test_unexpected_content_shape_is_a_clear_error_and_no_row_stays_streaming(penv):
    penv.replay.script("bad_content_shape.sse")
    events = await penv.turn("hi")
    assert done(events).status == "error"
    (error,) = [e for e in events if isinstance(e, ev.ErrorEvent)]
    assert error.message == f"{penv.replay.base_url} sent unexpected stream data: 'content' is a dict"
    assert [(r[0], r[1], r[3]) for r in penv.messages()] == [
        ("user", "hi", "complete"),
        ("assistant", "Start ", "error"),
        ("error", error.message, "error"),
    ]
    assert len(penv.replay.requests) == 1


ERROR_CASES = [
    (
        "err_openai_400.json",
        1,
        "refused the request (400): Invalid 'messages[1].content': string too long.",
    ),
    ("err_vllm_400.json", 1, 'refused the request (400): "auto" tool choice requires --enable-auto-tool-choice'),
    ("err_fastapi_422.json", 1, "refused the request (422): body.messages: Field required"),
    (
        "err_detail_string_400.json",
        1,
        "refused the request (400): Unsupported parameter: 'parallel_tool_calls' is not supported",
    ),
    (
        "err_gemini_list_400.json",
        1,
        'refused the request (400): Invalid JSON payload received. Unknown name "reasoning": Cannot find field.',
    ),
    (
        "err_plain_text_503.txt",
        3,
        "had a server error (503): upstream connect error or disconnect/reset before headers.",
    ),
    ("err_html_502.html", 3, "had a server error (502): 502 Bad Gateway"),
]


@pytest.mark.parametrize(("fixture", "requests", "message"), ERROR_CASES)
async def test_error_bodies_name_the_servers_own_message(penv, fixture, requests, message):
    penv.replay.script(*[fixture] * requests)
    events = await penv.turn("hi")
    assert done(events).status == "error"
    (error,) = [e for e in events if isinstance(e, ev.ErrorEvent)]
    assert message in error.message and "\n" not in error.message
    assert error.message.startswith(penv.replay.base_url)
    assert len(penv.replay.requests) == requests  # 5xx: retried; 4xx: sent once
    assert [(r[0], r[3]) for r in penv.messages()] == [("user", "complete"), ("error", "error")]


async def test_rate_limit_is_retried_and_the_reason_logged(penv):
    penv.replay.script("err_openai_429.json", "after_tool.sse")
    events = await penv.turn("hi")
    assert done(events).status == "complete"
    assert len(penv.replay.requests) == 2
    logs = penv.vault.log_file.read_text()
    assert "failed before any output" in logs and "Rate limit reached for gpt-4o-mini" in logs


async def test_refused_stream_options_are_dropped_and_remembered_for_the_endpoint(penv):
    penv.replay.script("err_mistral_stream_options_422.json", "after_tool.sse", "after_tool.sse")
    events = await penv.turn("hi")
    assert done(events).status == "complete"
    await penv.turn("again", done(events).conversation_id)  # a new client for the same endpoint
    first, second, third = penv.replay.bodies
    assert first["stream_options"] == {"include_usage": True}
    assert "stream_options" not in second and "stream_options" not in third
    logs = penv.vault.log_file.read_text()
    assert "retrying without stream_options" in logs


async def test_server_refusing_tools_with_stream_gets_a_non_streaming_request(penv):
    penv.replay.script("err_llamacpp_tools_with_stream.json", "llamacpp_nonstream_tool_reply.json")
    events = await penv.turn("weather in Lyon?")
    assert done(events).status == "complete"
    assert _Recording.calls == [{"tool": "get_weather", "location": "Lyon"}]
    bodies = penv.replay.bodies
    assert bodies[0]["stream"] is True and "tools" in bodies[0]
    assert "stream" not in bodies[1] and "tools" in bodies[1] and "stream_options" not in bodies[1]
    assert len(bodies) == 3  # the follow-up after the tool is also sent without streaming
    assert "stream" not in bodies[2]
    stored = penv.messages()
    assert [(c["name"], c["id"]) for c in _calls(stored)] == [("get_weather", "7MVSuZzOqGSx8G5fMdjzBRJxMP5xLfZe")]


async def test_empty_temperature_sends_none(penv):
    profiles.set_field(penv.profile, "temperature", "")
    penv.profile = Profile.get_by_id(penv.profile.id)
    assert penv.profile.temperature is None and profiles.field_as_text(penv.profile, "temperature") == ""
    penv.replay.script("after_tool.sse", "after_tool.sse")
    await penv.turn("hi")
    assert "temperature" not in penv.replay.bodies[0]
    profiles.set_field(penv.profile, "temperature", "0.3")
    await penv.turn("hi")
    assert penv.replay.bodies[1]["temperature"] == 0.3


async def test_a_timeout_after_the_request_went_out_is_not_sent_again(env):
    from fake_openai import Reply

    env.profile.request_timeout_s = 1
    env.profile.save()
    env.fake.script(*[Reply(text="late", hang_s=2) for _ in range(3)])
    client = LLMClient(env.fake.base_url, "k", timeout=1, backoff_s=0.01)
    loop = AgentLoop(env.vault, env.profile, ToolRegistry([GetWeather()]), client=client)
    events = [e async for e in loop.run_turn(None, "hi")]
    await loop.aclose()
    (error,) = [e for e in events if isinstance(e, ev.ErrorEvent)]
    assert error.kind == "timeout"
    assert len(env.fake.chat_requests) == 1  # the server may be working on it (and billing it)


async def test_a_refused_connection_is_retried_and_each_retry_logged(env):
    client = LLMClient("http://127.0.0.1:9/v1", "k", backoff_s=0.01)
    loop = AgentLoop(env.vault, env.profile, ToolRegistry([GetWeather()]), client=client)
    events = [e async for e in loop.run_turn(None, "hi")]
    await loop.aclose()
    assert [e.kind for e in events if isinstance(e, ev.ErrorEvent)] == ["connection"]
    log = env.vault.log_file.read_text()
    assert log.count("failed before any output): cannot reach http://127.0.0.1:9/v1") == 2
