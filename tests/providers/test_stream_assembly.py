"""Stream assembly on shapes too small for a recorded fixture: chunks fed directly as parsed JSON."""

from __future__ import annotations

import json

import pytest

from tui_agent.core.llm_errors import LLMError, server_message, stream_error
from tui_agent.core.stream_assembly import ReasoningDelta, StreamAssembler, TextDelta, ThinkSplitter


def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_parallel_calls_without_index_or_id_are_told_apart_by_name_and_complete_arguments():
    assembler = StreamAssembler()
    for delta in (
        {"tool_calls": [{"function": {"name": "a", "arguments": '{"x": '}}]},
        {"tool_calls": [{"function": {"arguments": "1}"}}]},
        {"tool_calls": [{"function": {"name": "a", "arguments": '{"x": 2}'}}]},
        {"tool_calls": [{"function": {"name": "b", "arguments": "{}"}}]},
    ):
        assembler.feed(chunk(delta))
    result = assembler.finish()
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("a", {"x": 1}),
        ("a", {"x": 2}),
        ("b", {}),
    ]
    ids = [c.id for c in result.tool_calls]
    assert len(set(ids)) == 3  # made up where the server sent none, in the form Mistral accepts
    assert all(len(i) == 9 and i.isalnum() for i in ids)


def test_same_index_with_a_new_id_starts_a_new_call_and_arguments_may_be_an_object():
    assembler = StreamAssembler()
    assembler.feed(chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "a", "arguments": {"q": 1}}}]}))
    assembler.feed(chunk({"tool_calls": [{"index": 0, "id": "c2", "function": {"name": "a", "arguments": "{}"}}]}))
    result = assembler.finish()
    assert [(c.id, json.loads(c.arguments)) for c in result.tool_calls] == [("c1", {"q": 1}), ("c2", {})]


@pytest.mark.parametrize("cut", range(1, 30))
def test_think_tags_cut_anywhere(cut):
    raw = "<think>plan it</think>\n\nThe answer."
    splitter = ThinkSplitter()
    pieces = splitter.feed(raw[:cut]) + splitter.feed(raw[cut:]) + splitter.flush()
    text = "".join(p.text for p in pieces if isinstance(p, TextDelta))
    thought = "".join(p.text for p in pieces if isinstance(p, ReasoningDelta))
    assert (text, thought) == ("The answer.", "plan it")


def test_text_that_merely_mentions_a_tag_later_stays_text():
    splitter = StreamAssembler()
    splitter.feed(chunk({"content": "Use <b>bold</b>; "}))
    splitter.feed(chunk({"content": "a literal < sign."}, "stop"))
    splitter.flush()
    assert splitter.finish().text == "Use <b>bold</b>; a literal < sign."


@pytest.mark.parametrize(
    "payload",
    [{"choices": "x"}, {"choices": [{"delta": "x"}]}, {"choices": [{"delta": {"tool_calls": {}}}]}, [1, 2]],
)
def test_unexpected_shapes_are_clear_errors(payload):
    with pytest.raises(LLMError) as info:
        StreamAssembler().feed(payload)
    assert info.value.kind == "bad_stream" and str(info.value).startswith("unexpected stream data")


def test_error_messages_of_every_body_shape():
    assert server_message('{"error": {"message": "m1"}}')[0] == "m1"
    assert server_message('{"message": "m2"}')[0] == "m2"
    assert server_message('{"detail": "m3"}')[0] == "m3"
    assert server_message('[{"error": {"code": 400, "message": "m4"}}]')[0] == "m4"
    assert server_message("plain\nsecond line")[0:2] == ("plain", "second line")
    assert server_message('data: {"error": {"message": "m5"}}\n\n')[0] == "m5"
    message, rest = server_message("<html><title>503 Service Unavailable</title><body>x</body></html>", "text/html")
    assert message == "503 Service Unavailable" and "<body>x</body>" in rest
    assert stream_error({"error": {"message": "slow", "code": 429}}) == ("slow", 429, True)
    assert stream_error({"error": {"message": "bad tool call", "code": 400}}) == ("bad tool call", 400, False)
    assert stream_error({"error": {"message": "Overloaded", "type": "overloaded_error"}})[2] is True
    assert stream_error({"choices": []}) is None
