"""Huge tool calls and results are kept bounded, and the context always holds the current exchange."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import Reply
from helpers import EchoTool, done, make_loop, rows

from tui_agent.core.context import ContextBuilder
from tui_agent.core.store import history
from tui_agent.core.tool_caps import MAX_TOOL_ARGUMENT_CHARS, MAX_TOOL_RESULT_CHARS
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry


class FloodTool(Tool):
    name = "flood"
    role = "flood_tool"
    description = "Return a very long result."
    parameters = {"type": "object", "properties": {}, "required": []}

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"rows": ["row " + "y" * 96] * 20_000})  # ~2 MB


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(EchoTool())
    reg.register(FloodTool())
    return reg


async def turn(env, text: str, conversation_id: int | None = None) -> list[Any]:
    loop = make_loop(env, registry=registry())
    try:
        return [event async for event in loop.run_turn(conversation_id, text)]
    finally:
        await loop.aclose()


async def test_a_5mb_tool_call_is_not_run_and_the_next_request_keeps_the_conversation(env):
    huge = json.dumps({"text": "x" * (5 << 20)})
    env.fake.script(Reply(text="earlier answer"), Reply(tool_calls=[("echo", huge)]), Reply(text="sorry"))
    first = await turn(env, "hello there")
    conversation = done(first).conversation_id
    events = await turn(env, "please echo a lot", conversation)
    assert done(events).status == "complete"

    follow_up = env.fake.chat_requests[-1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert follow_up[3]["content"] == "please echo a lot"
    call = follow_up[4]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"])["note"] == (
        f"{len(huge):,} characters of arguments were not kept (the limit is {MAX_TOOL_ARGUMENT_CHARS:,})"
    )
    result = json.loads(follow_up[5]["content"])
    assert result["status"] == "error"
    assert result["error"].startswith(f"arguments too long ({len(huge):,} characters; the limit is 16,000): not run")
    assert len(json.dumps(follow_up)) < 40_000

    stored = rows(env.vault.db_path, "SELECT length(tool_calls), length(tool_arguments), length(content) FROM messages")
    assert max(max(v or 0 for v in row) for row in stored) < 2 * MAX_TOOL_ARGUMENT_CHARS


async def test_a_2mb_tool_result_is_kept_cut_with_a_note(env):
    env.fake.script(Reply(tool_calls=[("flood", "{}")]), Reply(text="that was long"))
    events = await turn(env, "flood me")
    assert done(events).status == "complete"
    follow_up = env.fake.chat_requests[-1]["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "tool"]
    kept = json.loads(follow_up[3]["content"])
    assert kept["status"] == "ok"
    assert kept["note"].startswith("the result had 2,") and kept["note"].endswith(
        f"characters; only the first {MAX_TOOL_RESULT_CHARS:,} were kept"
    )
    assert kept["start"].startswith('{"status": "ok", "data": {"rows": ["row yyy')
    assert len(kept["start"]) == MAX_TOOL_RESULT_CHARS
    (content,) = rows(env.vault.db_path, "SELECT content FROM messages WHERE role = 'flood_tool'")[0]
    assert json.loads(content) == kept


def test_the_budget_keeps_the_latest_user_message_and_the_open_exchange(env):
    builder = ContextBuilder(env.vault)
    env.profile.context_budget_tokens = 500
    conversation = history.new_conversation().id
    history.add_message(conversation, "user", "old question " + "o" * 400)
    history.add_message(conversation, "assistant", "old answer")
    history.add_message(conversation, "user", "the question " + "q" * 40_000)  # 10,000 tokens alone
    calls = [{"id": "c1", "name": "echo", "arguments": json.dumps({"text": "a" * 8_000})}]
    history.add_message(conversation, "assistant", "", tool_calls=calls)
    history.add_message(conversation, "echo_tool", "r" * 30_000, tool_name="echo", tool_call_id="c1")
    messages = builder.build(conversation, env.profile)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[1]["content"].startswith("the question")
    assert messages[2]["tool_calls"][0]["id"] == "c1" and messages[3]["tool_call_id"] == "c1"

    # With room to spare, older messages come back, newest first and whole.
    env.profile.context_budget_tokens = 30_000
    roles = [m["role"] for m in builder.build(conversation, env.profile)]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool"]


def test_the_budget_never_splits_a_tool_exchange(env):
    builder = ContextBuilder(env.vault)
    env.profile.context_budget_tokens = 2_000
    conversation = history.new_conversation().id
    history.add_message(conversation, "user", "first")
    calls = [{"id": "c1", "name": "echo", "arguments": "{}"}, {"id": "c2", "name": "echo", "arguments": "{}"}]
    history.add_message(conversation, "assistant", "", tool_calls=calls)
    history.add_message(conversation, "echo_tool", "small", tool_name="echo", tool_call_id="c1")
    history.add_message(conversation, "echo_tool", "big " * 3_000, tool_name="echo", tool_call_id="c2")
    history.add_message(conversation, "assistant", "answer")
    history.add_message(conversation, "user", "second")
    messages = builder.build(conversation, env.profile)
    # The old exchange does not fit as a whole, so none of it is sent (and nothing older either).
    assert [m["role"] for m in messages] == ["system", "assistant", "user"]
    env.profile.context_budget_tokens = 5_000
    roles = [m["role"] for m in builder.build(conversation, env.profile)]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]


class Counting(ContextBuilder):
    """A builder that notes how many rows each build read from the store."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []

    def _recent(self, conversation_id: int, budget_tokens: int) -> Any:
        read = super()._recent(conversation_id, budget_tokens)
        self.reads.append(len(read[0]))
        return read


class WholeWindow(ContextBuilder):
    """A builder that reads the whole window (the newest 400 rows), whatever the budget can use."""

    def _recent(self, conversation_id: int, budget_tokens: int) -> Any:
        return super()._recent(conversation_id, 1 << 62)


@pytest.mark.slow
def test_a_long_conversation_reads_only_the_rows_its_budget_can_use(env):
    """The request is the one a read of the whole window (400 rows) gives, from the rows the budget
    can use and one exchange more, read at once (store/context_page.py): a long session's turns
    do not grow with what the budget leaves out."""
    conversation = history.new_conversation().id
    for i in range(300):
        history.add_message(conversation, "user", f"question {i} " + "q" * 200)
        if i % 7 == 3:  # tool exchanges too, kept whole or not at all
            calls = [{"id": f"c{i}-{n}", "name": "echo", "arguments": "{}"} for n in range(3)]
            history.add_message(conversation, "assistant", "", tool_calls=calls)
            for n in range(3):
                history.add_message(conversation, "echo_tool", "r" * 300, tool_name="echo", tool_call_id=f"c{i}-{n}")
        history.add_message(conversation, "assistant", f"answer {i} " + "a" * 200)
    whole = WholeWindow(env.vault)
    for budget in (500, 4_000, 12_000, 40_000, 2_000_000):
        env.profile.context_budget_tokens = budget
        stepped = Counting(env.vault)
        built = stepped.build(conversation, env.profile)
        expected = whole.build(conversation, env.profile)
        assert built == expected
        assert stepped.window == whole.window and stepped.window is not None
        (read,) = stepped.reads  # one read a build
        if budget < 2_000_000:
            # What was sent (a message an entry) and no more than the exchange that did not fit (an
            # assistant message and its 3 results), or the whole window (40,000: it holds them all).
            left_out = read - (len(built) - 1)
            assert stepped.window.truncated and (0 < left_out <= 4 or read == 400), (budget, read, len(built))
    assert read == 400  # a budget larger than the window: the whole window


def test_reading_in_steps_never_starts_inside_a_tool_exchange(env):
    """An exchange with more results than the budget holds: its assistant message is read too (and
    the user's message before it, which is always sent), in one read."""
    env.profile.context_budget_tokens = 500
    conversation = history.new_conversation().id
    history.add_message(conversation, "user", "run them all")
    calls = [{"id": f"c{n}", "name": "echo", "arguments": "{}"} for n in range(80)]
    history.add_message(conversation, "assistant", "", tool_calls=calls)
    for n in range(80):
        history.add_message(conversation, "echo_tool", "r" * 100, tool_name="echo", tool_call_id=f"c{n}")
    builder = Counting(env.vault)
    messages = builder.build(conversation, env.profile)
    assert builder.reads == [82]
    assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
    assert len(messages[2]["tool_calls"]) == 80 and len(messages) == 3 + 80
