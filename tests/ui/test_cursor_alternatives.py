"""The message cursor survives regenerate and switching alternatives (issue 25, item 7)."""

from __future__ import annotations

import pytest
from pilot_helpers import on_screen, running, until

from tui_agent.core.store import history
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import AssistantBubble


@pytest.mark.slow
async def test_after_regenerate_the_cursor_is_on_the_new_reply_and_left_right_work(env):
    async with running(env, "first answer", "second answer") as (app, pilot):
        app.conversation_view.composer.load_text("hello")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns and app.conversation_view.chat_log.query(AssistantBubble))
        await pilot.press("up", "r")
        await until(
            pilot,
            lambda: (
                not app.turns and app.conversation_view.chat_log.query(AssistantBubble).last().text == "second answer"
            ),
        )
        await pilot.pause()
        log = app.conversation_view.chat_log
        (bubble,) = log.query(AssistantBubble)
        assert log.has_focus and log.cursor is bubble and bubble.has_class("-cursor")
        assert app.active_bindings["left"].binding.action == "cursor_alternative(-1)"
        await pilot.press("left")
        await until(pilot, lambda: log.query(AssistantBubble).last().text == "first answer")
        await pilot.pause()
        (bubble,) = log.query(AssistantBubble)
        assert log.cursor is bubble and bubble.has_class("-cursor")
        assert bubble.query_one(AlternativesBar).label() == "1 / 2"
        await pilot.press("right")
        await until(pilot, lambda: log.query(AssistantBubble).last().text == "second answer")
        await pilot.pause()
        assert log.cursor is log.query(AssistantBubble).last()


def forked_chat() -> tuple[int, int, int]:
    """q, then two answers to it, each followed by 30 messages; the second answer's branch active."""
    conversation = history.new_conversation("forked")
    question = history.add_message(conversation.id, "user", "the question")
    first = history.add_message(conversation.id, "assistant", "answer one")
    for i in range(30):
        history.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", f"after one {i}")
    second = history.add_message(conversation.id, "assistant", "answer two", parent_id=question.id)
    for i in range(30):
        history.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", f"after two {i}")
    return conversation.id, first.id, second.id


@pytest.mark.slow
async def test_switching_alternatives_on_an_early_reply_keeps_it_and_the_cursor_in_place(env):
    _, first, second = forked_chat()
    async with running(env) as (app, pilot):
        log = app.conversation_view.chat_log
        await pilot.press("up")
        while log.cursor is None or getattr(log.cursor, "message_id", None) != second:
            await pilot.press("up")
        await pilot.pause()
        y = log.cursor.region.y
        assert on_screen(app, log.cursor)
        await pilot.press("left")
        await until(pilot, lambda: getattr(log.cursor, "message_id", None) == first)
        await pilot.pause()
        cursor = log.cursor
        assert cursor.text == "answer one" and cursor.has_class("-cursor") and log.has_focus
        assert on_screen(app, cursor) and cursor.region.y == y  # where the other answer was
        # Down goes on through the chosen branch.
        await pilot.press("down")
        assert log.cursor.text == "after one 0"
