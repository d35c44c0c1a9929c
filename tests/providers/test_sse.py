"""The SSE reader by the WHATWG spec's rules, fed in every possible chunking (core/sse.py).

Lines end at CR, LF or CRLF only; U+2028, U+2029 and U+0085 are text (``aiter_lines()`` split on
them and a reply holding one ended with "data that is not JSON").
"""

from __future__ import annotations

import json

import pytest
from sse_replay import load

from tui_agent.core.sse import Decoder, Event, LineSplitter, sse_events


def events_of(*chunks: bytes) -> list[Event]:
    decoder = Decoder()
    found = [event for chunk in chunks for event in decoder.feed(chunk)]
    return found + list(decoder.close())


def test_only_cr_lf_and_crlf_end_a_line():
    splitter = LineSplitter()
    text = "a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg\rh\ni\r\nj"
    assert [*splitter.feed(text), *splitter.close()] == ["a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg", "h", "i", "j"]


def test_a_cr_ending_one_chunk_and_an_lf_starting_the_next_are_one_break():
    splitter = LineSplitter()
    lines = [*splitter.feed("one\r"), *splitter.feed(""), *splitter.feed("\ntwo\r"), *splitter.feed("\r\n")]
    assert lines == ["one", "two", ""]
    assert events_of(b"data: x\r", b"\n\r", b"\n") == [Event("x")]
    # A CR alone is a line end too: two CRs are an event's end.
    assert events_of(b"data: x\r\rdata: y\r\r") == [Event("x"), Event("y")]


def test_field_rules():
    stream = (
        b"\xef\xbb\xbf: a comment\n"  # the BOM is dropped: the comment is still a comment
        b"retry: 2500\n"
        b"id: 7\n"
        b"event: delta\n"
        b"data:  two spaces: one is kept\n"
        b"data\n"  # no colon: a field named data with an empty value
        b"data:no space\n"
        b"unknown: ignored\n"
        b" data: a leading space makes another field\n"
        b"\n"
        b"\n"  # a blank line with no data dispatches nothing
        b"data: \xef\xbb\xbfnot at the start: kept\n"
        b"\n"
        b"event: ignored\n"
        b"\n"
        b"data: after an event with no data\n"
        b"\n"
    )
    decoder = Decoder()
    found = [e for e in decoder.feed(stream)] + list(decoder.close())
    assert found == [
        Event(" two spaces: one is kept\n\nno space", "delta", "7"),
        Event("\ufeffnot at the start: kept", "message", "7"),
        Event("after an event with no data", "message", "7"),
    ]
    assert decoder._events.retry_ms == 2500


def test_an_empty_data_field_is_an_event_with_empty_data():
    assert events_of(b"data:\n\n: ping\n\ndata: {}\n\n") == [Event(""), Event("{}")]


def test_a_last_event_without_its_blank_line_is_still_delivered():
    assert events_of(b"data: a\n\ndata: [DONE]") == [Event("a"), Event("[DONE]")]


@pytest.mark.parametrize(
    "fixture", ["unicode_line_breaks_text.sse", "unicode_line_breaks_args.sse", "spec_framing_bytewise.sse"]
)
@pytest.mark.parametrize("line_ends", ["lf", "crlf", "cr"])
def test_every_split_of_a_stream_gives_the_same_events(fixture, line_ends):
    """Cut at every byte (inside a 2-, 3- and 4-byte character, between CR and LF), and one byte at a time."""
    body = load(fixture).body.replace(b"\r\n", b"\n")
    body = body.replace(b"\n", {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}[line_ends])
    whole = events_of(body)
    datas = [e.data for e in whole]
    assert datas[-1] == "[DONE]" and len(datas) >= 3
    for data in datas[:-1]:
        json.loads(data)  # each event is whole JSON
    for cut in range(1, len(body)):
        assert events_of(body[:cut], body[cut:]) == whole, cut
    assert events_of(*(body[i : i + 1] for i in range(len(body)))) == whole


def test_the_separators_survive_in_the_parsed_text():
    body = load("unicode_line_breaks_text.sse").body
    contents = [json.loads(e.data)["choices"][0]["delta"] for e in events_of(body)[:-1]]
    assert contents[1]["content"] == "First line\u2028second line"
    assert contents[2]["content"] == "\u2029new paragraph\u0085next line."


async def test_sse_events_reads_an_async_byte_stream():
    async def chunks():
        for piece in (b"data: caf\xc3", b"\xa9\r", b"\n\r\n"):
            yield piece

    assert [e async for e in sse_events(chunks())] == [Event("café")]
