"""Errors, retries and refusals of real providers, replayed over HTTP through the openai client and AgentLoop.

Each case asserts the one-line message (the server's own words), the stored rows and how many
requests went out: a request is sent again only when the attempt provably failed.
"""

# ruff: noqa: F811  (the penv fixture is imported from provider_env)
from __future__ import annotations

import json

import pytest
from helpers import done
from provider_env import GetWeather, Recording, penv  # noqa: F401

from tui_agent.core import events as ev
from tui_agent.core.llm import LLMClient
from tui_agent.core.loop import AgentLoop
from tui_agent.core.tools.registry import ToolRegistry


def _calls(stored):
    return [c for r in stored if r[0] == "assistant" and r[4] for c in json.loads(r[4])]


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
    if fixture.endswith(".html"):
        assert "nginx/1.24.0" in penv.vault.log_file.read_text()  # the rest of the page is logged
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
    # Remembered in the vault too: a new process (here: a cleared memory) does not ask again.
    from tui_agent.core import endpoint_quirks

    endpoint_quirks._ENDPOINT_QUIRKS.clear()
    await penv.turn("once more")
    assert len(penv.replay.bodies) == 4 and "stream_options" not in penv.replay.bodies[3]


async def test_server_refusing_tools_with_stream_gets_a_non_streaming_request(penv):
    penv.replay.script("err_llamacpp_tools_with_stream.json", "llamacpp_nonstream_tool_reply.json")
    events = await penv.turn("weather in Lyon?")
    assert done(events).status == "complete"
    assert Recording.calls == [{"tool": "get_weather", "location": "Lyon"}]
    bodies = penv.replay.bodies
    assert bodies[0]["stream"] is True and "tools" in bodies[0]
    assert "stream" not in bodies[1] and "tools" in bodies[1] and "stream_options" not in bodies[1]
    assert len(bodies) == 3  # the follow-up after the tool is also sent without streaming
    assert "stream" not in bodies[2]
    stored = penv.messages()
    assert [(c["name"], c["id"]) for c in _calls(stored)] == [("get_weather", "7MVSuZzOqGSx8G5fMdjzBRJxMP5xLfZe")]


@pytest.mark.slow
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
