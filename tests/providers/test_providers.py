"""Recorded-style streams of real providers replayed over HTTP through the real openai client and AgentLoop.

Each case names a fixture in ``tests/fixtures/streams/`` (its header names the documented source)
and asserts the assembled tool calls, the stored rows (content, reasoning, status) and the
requests that went out (how many, and what they carried).
"""

# ruff: noqa: F811  (the penv fixture is imported from provider_env)
from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import done
from provider_env import GetWeather, Recording, WebSearch, penv  # noqa: F401

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.store.models import Profile


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
    ("unicode_line_breaks_args.sse", [("get_weather", {"location": "Paris\u2028\u0085Île-de-France\u2029FR"})], "", ""),
]


@pytest.mark.parametrize(("fixture", "expected", "content", "reasoning"), TOOL_CASES)
async def test_tool_call_shapes_run_the_right_tools_once(penv, fixture, expected, content, reasoning):
    penv.replay.script(fixture)
    events = await penv.turn("weather?")
    assert done(events).status == "complete"
    started = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ev.ToolStarted)]
    assert started == expected
    assert [(c.pop("tool"), c) for c in Recording.calls] == expected
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
    (
        "unicode_line_breaks_text.sse",
        "First line\u2028second line\u2029new paragraph\u0085next line.",
        "Copied\u2028from the web.",
    ),
    ("spec_framing_bytewise.sse", "Crème brûlée für 🍮 – done.", ""),
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
