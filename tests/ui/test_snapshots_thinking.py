"""Snapshots of the "Thinking" block (SVGs in snapshots/test_snapshots_thinking/)."""

from __future__ import annotations

from pilot_helpers import make, screen_text, steady_screen, until

from tui_agent.core.store import history

SIZE = (100, 24)


def reasoning_conversation() -> None:
    conversation = history.new_conversation("reasoning")
    history.add_message(conversation.id, "user", "Which is bigger, 9.11 or 9.8?")
    history.add_message(
        conversation.id,
        "assistant",
        "**9.8** is bigger.",
        reasoning="Compare the tenths: 9.11 has 1 tenth, 9.8 has 8 tenths.\nSo 9.8 is greater.",
    )


def test_thinking_collapsed_above_the_reply(env, snap_compare):
    """You should see the question, then a collapsed '▶ Thinking' line above the reply '9.8 is bigger.'."""
    reasoning_conversation()
    assert snap_compare(make(env), terminal_size=SIZE)


def test_thinking_expanded(env, snap_compare):
    """You should see the 'Thinking' block open: two dim italic lines of reasoning above the reply."""
    reasoning_conversation()

    async def run_before(pilot):
        await pilot.pause()
        pilot.app.conversation_view.chat_log.query_one("ThinkingBlock").collapsed = False
        await until(pilot, lambda: "So 9.8 is greater." in screen_text(pilot.app), what="the reasoning never shown")
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)
