"""The chat view follows what is sent and its reply (issue 25, item 1); End and PageDown reach the
end from the composer; paging after a jump (item 12)."""

from __future__ import annotations

import pytest
from fake_openai import Reply
from pilot_helpers import on_screen, running, steady_screen, until
from textual.widgets import Footer

from tui_agent.core.store import history
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble


def long_chat(lines: int = 8) -> int:
    conversation = history.new_conversation("long")
    for i in range(30):
        body = "\n\n".join(f"line {j} of message {i}" for j in range(lines))
        history.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", body)
    return conversation.id


async def type_and_send(app, pilot, text: str) -> None:
    for key in text:
        await pilot.press(key)
    await pilot.press("enter")
    await until(pilot, lambda: not app.turns)
    await pilot.pause()


@pytest.mark.slow
async def test_sending_after_the_message_cursor_shows_the_message_and_reply(env):
    long_chat()
    async with running(env, "the reply to hi") as (app, pilot):
        await pilot.pause()
        await pilot.press("up", "up", "up", "escape")
        assert app.focused is app.conversation_view.composer
        await type_and_send(app, pilot, "hi")
        await until(pilot, lambda: on_screen(app, app.conversation_view.chat_log.query(AssistantBubble).last()))
        assert app.conversation_view.chat_log.query(UserBubble).last().text == "hi"
        assert on_screen(app, app.conversation_view.chat_log.query(UserBubble).last())
        assert app.conversation_view.chat_log.following


@pytest.mark.slow
async def test_a_long_reply_is_followed_to_its_end_after_the_cursor(env):
    long = "\n\n".join(f"paragraph {i} of the reply" for i in range(60))
    env.fake.script(Reply(text=long, chunk_size=40, chunk_delay_s=0.01))
    long_chat()
    async with running(env) as (app, pilot):
        await pilot.pause()
        await pilot.press("up", "up", "up", "escape")
        await type_and_send(app, pilot, "hi")
        log = app.conversation_view.chat_log
        await until(pilot, lambda: log.scroll_y >= log.max_scroll_y and log.max_scroll_y > 0)
        assert on_screen(app, log.query(AssistantBubble).last().query("Markdown").last().children[-1])


@pytest.mark.slow
async def test_sending_after_ctrl_o_shows_the_message_and_reply(env):
    long_chat()
    async with running(env, "the reply to hi") as (app, pilot):
        await pilot.pause()
        await pilot.press("up", "up", "up", "escape", "ctrl+o")
        await type_and_send(app, pilot, "hi")
        await until(pilot, lambda: on_screen(app, app.conversation_view.chat_log.query(AssistantBubble).last()))


@pytest.mark.slow
async def test_end_and_page_down_from_the_composer_reach_the_end(env):
    long_chat()
    async with running(env) as (app, pilot):
        await pilot.pause()
        log = app.conversation_view.chat_log
        await pilot.press("up", "up", "up", "up", "up", "escape")
        await until(pilot, lambda: log.scroll_y < log.max_scroll_y)
        assert app.focused is app.conversation_view.composer
        await pilot.press("end")
        await until(pilot, lambda: log.scroll_y >= log.max_scroll_y)
        await pilot.press("up", "up", "up", "up", "up", "escape")
        await until(pilot, lambda: log.scroll_y < log.max_scroll_y)
        for _ in range(10):
            await pilot.press("pagedown")
        await until(pilot, lambda: log.scroll_y >= log.max_scroll_y)
        assert log.following


@pytest.mark.slow
async def test_scrolling_up_during_a_reply_stops_following_it(env):
    import threading

    hold = threading.Event()
    long = "\n\n".join(f"paragraph {i} of the reply" for i in range(60))
    env.fake.script(Reply(text=long, chunk_size=200, hold=hold))
    long_chat()
    async with running(env) as (app, pilot):
        await pilot.pause()
        log = app.conversation_view.chat_log
        app.conversation_view.composer.load_text("hi")
        await pilot.press("enter")
        await until(pilot, lambda: "paragraph 5" in log.query(AssistantBubble).last().text)
        await pilot.press("pageup")
        await until(pilot, lambda: log.scroll_y < log.max_scroll_y)
        hold.set()
        await until(pilot, lambda: not app.turns)
        await pilot.pause()
        assert not log.following and log.scroll_y < log.max_scroll_y
        await pilot.press("end")  # and End brings it back
        await until(pilot, lambda: log.following and log.scroll_y >= log.max_scroll_y)


async def test_a_view_held_past_the_end_of_a_log_not_yet_measured_does_not_follow_again(env):
    """PageUp from a short view loads the page above and holds the view on what the user looked at.
    Under load the page's widgets can be laid out a refresh before the log's height is: put back
    then, the view stopped at the end, and a view at the end follows it again (the reply the user
    scrolled away from pulled the view back down). Here the held place is past the end, as then."""
    conversation = history.new_conversation("one page")
    for i in range(12):  # one page (no page above to load meanwhile), taller than the view
        history.add_message(conversation.id, "user", "\n\n".join(f"line {j} of message {i}" for j in range(8)))
    async with running(env) as (app, pilot):
        await pilot.pause()
        log = app.conversation_view.chat_log
        # The rest of the page comes after the first paint, the Footer once the client is ready;
        # then there is no page above to load, and no scroll to the end is still to come (one asked
        # for before the user's scroll, and run after it, would follow the end again: loaded run 165).
        await until(pilot, lambda: not log.has_older and log.max_scroll_y > 0 and log.following and app.query(Footer))
        await steady_screen(app, pilot)
        log.release_anchor()  # the user scrolled away (a page up)
        log.scroll_to(y=0, animate=False)
        await until(pilot, lambda: log.scroll_y == 0 and not log.following)
        top = log.children[-1]
        log.hold_view(top, log.max_scroll_y + 30 - top.virtual_region.y)  # 30 rows past the end
        await pilot.pause()
        await pilot.pause()
        assert not log.following and log.scroll_y == 0  # not put at the end before the height came
        log.watch_virtual_size()  # the layout done with the place still past the end: the end, not followed
        assert log.scroll_y == log.max_scroll_y and not log.following

        # Held past the end again, then the user scrolls before the height comes: the view is theirs.
        log.scroll_to(y=0, animate=False)
        await until(pilot, lambda: log.scroll_y == 0)
        log.hold_view(top, log.max_scroll_y + 30 - top.virtual_region.y)
        await pilot.pause()
        await pilot.pause()
        log.scroll_to(y=5, animate=False)
        await until(pilot, lambda: log.scroll_y == 5)
        log.watch_virtual_size()
        assert log.scroll_y == 5 and not log.following
