"""The "Thinking" block in the app: streamed reasoning above the reply, collapsed once the answer
starts, a key and a palette entry to show/hide all, and stored reasoning on reopening."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pilot_helpers import running, until
from sse_replay import ReplayServer, held

from tui_agent.core import profiles
from tui_agent.ui.commands import ACTIONS
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.thinking import ThinkingBlock


@pytest.fixture
def replay(env) -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    profiles.set_field(env.profile, "base_url", server.base_url)  # set here: approved here
    yield server
    server.stop()


async def run(app, pilot, text: str) -> None:
    app.conversation_view.composer.load_text(text)
    await pilot.press("enter")
    for _ in range(300):
        await pilot.pause(0.05)
        if not app.turns:
            await pilot.pause()
            return
    raise AssertionError("turn did not finish")


@pytest.mark.parametrize(
    ("fixture", "answer", "reasoning"),
    [
        ("deepseek_reasoning_content.sse", "9.8 is greater.", "9.11 vs 9.8: compare tenths, 1 < 8."),
        ("llamacpp_unopened_think.sse", "Hello! How can I help?", "Okay, the user greets me."),
    ],
)
@pytest.mark.slow
async def test_thinking_block_above_the_reply_collapses_and_reopens(env, replay, fixture, answer, reasoning):
    replay.script(fixture)
    async with running(env, size=(100, 30)) as (app, pilot):
        await run(app, pilot, "question")
        (bubble,) = app.conversation_view.chat_log.query(AssistantBubble)
        (block,) = bubble.query(ThinkingBlock)
        assert bubble.text.strip() == answer
        assert block.text.strip() == reasoning and block.shown() == reasoning
        assert block.collapsed and block.title == "Thinking"  # what a reload shows (issue 25 item 10)
        assert bubble.children.index(block) < bubble.children.index(bubble.query_one(".reply"))
        # The key hides every thinking block, and shows them again.
        await pilot.press("ctrl+g")
        assert not block.display
        await pilot.press("ctrl+g")
        assert block.display
        # Reopened, the conversation shows the stored reasoning, collapsed.
        await app.conversation_view.chat_log.show_conversation(app.conversation_view.chat_log.conversation_id)
        await pilot.pause()
        (bubble,) = app.conversation_view.chat_log.query(AssistantBubble)
        (block,) = bubble.query(ThinkingBlock)
        assert block.collapsed and block.title == "Thinking" and block.text == reasoning
        assert bubble.text == answer


async def test_hidden_thinking_stays_hidden_for_new_replies_and_palette_has_the_entry(env, replay):
    assert ("Show or hide all thinking blocks", "toggle_thinking") in [(t, a) for t, a, _ in ACTIONS]
    replay.script("vllm_reasoning.sse")
    async with running(env, size=(100, 30)) as (app, pilot):
        await app.run_action("toggle_thinking")
        await run(app, pilot, "hi")
        (block,) = app.conversation_view.chat_log.query(ThinkingBlock)
        assert not block.display
        # Ctrl+O (all tool results) leaves thinking blocks alone.
        await pilot.press("ctrl+o")
        assert block.collapsed


async def test_live_thinking_streams_open_then_collapses_when_the_answer_starts(env, replay):
    # DeepSeek's stream is held after its reasoning deltas, before the first answer delta.
    replay.script(held("deepseek_reasoning_content.sse", 3))
    async with running(env, size=(100, 30)) as (app, pilot):
        app.conversation_view.composer.load_text("question")
        await pilot.press("enter")
        block = None
        for _ in range(300):
            await pilot.pause(0.05)
            blocks = list(app.conversation_view.chat_log.query(ThinkingBlock))
            if blocks and blocks[0].text.strip() == "9.11 vs 9.8: compare tenths, 1 < 8.":
                block = blocks[0]
                break
        assert block is not None, "the reasoning never streamed into a thinking block"
        assert not block.collapsed and block.title == "Thinking… 0s"
        await until(
            pilot, lambda: " · thinking · " in str(app.conversation_view.status_line.render()), what="the status line"
        )
        (bubble,) = app.conversation_view.chat_log.query(AssistantBubble)
        assert bubble.text == ""
        replay.release()
        await until(pilot, lambda: not app.turns)
        assert block.collapsed and block.title == "Thinking"  # what a reload shows (issue 25 item 10)
        assert bubble.text == "9.8 is greater."


async def test_a_transient_midstream_error_shows_the_partial_marked_and_the_retried_reply(env, replay):
    replay.script("openrouter_midstream_transient.sse")
    async with running(env, size=(100, 30)) as (app, pilot):
        await run(app, pilot, "hi")
        first, second = app.conversation_view.chat_log.query(AssistantBubble)
        assert first.text == "The first half of " and first.status == "error"
        assert second.text == "All done." and second.status == "complete"
