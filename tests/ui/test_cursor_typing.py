"""Typing while the message cursor is on a message is never lost: after a click (the browser's way of
focusing) every printable key goes to the composer; after Up/Down the listed letters (c, p, r, e)
are commands and every other printable key goes to the composer."""

from __future__ import annotations

import pytest
from pilot_helpers import one_turn

from tui_agent.ui.widgets.bubbles import UserBubble


@pytest.mark.slow
async def test_typing_after_a_click_goes_to_the_composer_not_to_the_commands(env):
    async with one_turn(env, "first", "one") as (app, pilot):
        requests = len(env.fake.chat_requests)
        user = app.conversation_view.chat_log.query_one(UserBubble)
        await pilot.click(user)
        await pilot.pause()
        assert app.conversation_view.chat_log.cursor is user
        await pilot.press(*"copy, regenerate, edit")
        await pilot.pause()
        assert app.conversation_view.composer.text == "copy, regenerate, edit"
        assert app.focused is app.conversation_view.composer and app.conversation_view.chat_log.cursor is None
        assert len(env.fake.chat_requests) == requests  # no regenerate ran
        assert not any(n.message.startswith("Copied") for n in app._notifications)


@pytest.mark.slow
async def test_other_printable_keys_in_the_keyboard_cursor_go_to_the_composer(env):
    async with one_turn(env, "first", "one") as (app, pilot):
        await pilot.press("up")
        await pilot.pause()
        assert app.conversation_view.chat_log.cursor is not None and app.focused is app.conversation_view.chat_log
        await pilot.press(*"hi there")
        await pilot.pause()
        assert app.conversation_view.composer.text == "hi there" and app.focused is app.conversation_view.composer
        # The listed letters stay commands when the cursor was moved with the keyboard.
        app.conversation_view.composer.load_text("")
        await pilot.press("up", "p")
        await pilot.pause()
        assert app.conversation_view.composer.text == "one"  # "To prompt": the reply's text in the composer
