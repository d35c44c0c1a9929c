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


@pytest.mark.slow
async def test_keys_typed_in_a_burst_after_a_click_reach_the_composer_in_order(env):
    """A browser sends a typed word in one burst: the keys arrive while the focus is still moving
    from the log to the composer, with the event loop turning between some of them. Whatever the
    interleaving, the composer gets them in the order typed (once the log decided after the key had
    been queued to it, later keys overtook earlier ones: "copy, pt, rinregenerate")."""
    import asyncio

    from textual import events

    text = "copy, paste, print, regenerate"
    async with one_turn(env, "first", "one") as (app, pilot):
        composer = app.conversation_view.composer
        user = app.conversation_view.chat_log.query_one(UserBubble)
        for turns in (0, 2, 8, 20):  # event-loop turns after some keys: the rest meets the hand-over at other steps
            composer.load_text("")
            await pilot.click(user)
            await pilot.pause()
            assert app.focused is app.conversation_view.chat_log
            for index, char in enumerate(text):
                app.post_message(events.Key("space" if char == " " else char, char))
                for _ in range(turns if index in (0, 7, 15) else 0):
                    await asyncio.sleep(0)
            await pilot.pause()
            assert composer.text == text, f"{turns} turns after the first key"
