"""What a new user trips over (issue 11): failures visible, Markdown that keeps text, markup escaped,
text-only chat models, focus, newer pages after a jump, one-off --profile, status line, retry."""

from __future__ import annotations

import json

import pytest
from fake_openai import Reply
from helpers import done, rows, run_turn, settled
from pilot_helpers import make, one_turn, running, send, settle, until
from textual.widgets import Input, Markdown, TextArea

from tui_agent.core import profiles, settings
from tui_agent.core.store import history
from tui_agent.core.store.models import Setting
from tui_agent.ui.commands import ACTIONS, HistorySearch
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, UserBubble
from tui_agent.ui.widgets.composer import SlashHints
from tui_agent.ui.widgets.tool_block import ToolResultView


def status(app) -> str:
    return str(app.conversation_view.status_line.render())


# ------------------------------------------------------------------ 2. failures are visible
async def test_a_failed_image_tool_shows_a_red_card_and_the_reason_on_the_title(env):
    async with one_turn(env, "/imagine FAIL a fox", "Sorry, that failed.", "Again.") as (app, pilot):
        await send(app, pilot, "/imagine GARBAGE a fox")
        first, second = app.conversation_view.chat_log.query(ToolResultView)
        card = str(first.query_one(ErrorCard).render())
        assert card.startswith("✗ generate_image failed\nflux2 failed: model exploded: out of memory")
        assert first.block.collapsed and first.block.title.startswith(
            "Tool result · generate_image · ✗ flux2 failed: model exploded"
        )
        card = str(second.query_one(ErrorCard).render())
        assert "The generator did not make a PNG" in card and "image_command" in card
        # the card is outside the collapsed block: it is on screen
        assert first.query_one(ErrorCard).region.height > 0


async def test_every_tool_puts_its_reason_on_the_title(env):
    async with one_turn(
        env,
        "show me nope",
        Reply(tool_calls=[("show_image", json.dumps({"path": "media/nope.png"}))]),
        Reply(text="It is not there."),
    ) as (app, _pilot):
        (view,) = app.conversation_view.chat_log.query(ToolResultView)
        assert view.block.title == "Tool result · show_image · ✗ not found: media/nope.png"
        assert view.query(ErrorCard)


async def test_capped_count_warning_is_next_to_the_carousel(env):
    arguments = json.dumps({"prompt": "foxes", "path": "foxes/f.png", "count": 10, "reason": "r"})
    async with one_turn(
        env, "ten foxes please", Reply(tool_calls=[("generate_image", arguments)]), Reply(text="Four foxes.")
    ) as (app, _pilot):
        (view,) = app.conversation_view.chat_log.query(ToolResultView)
        warning = view.query_one(".tool-warning")
        assert str(warning.render()) == "⚠ count 10 capped at 4"
        names = [type(w).__name__ for w in view.children]
        assert names == ["ImageCarousel", "Static", "ToolBlock"]
        assert "⚠ count 10 capped at 4" in view.block.title and not view.query(ErrorCard)


# ------------------------------------------------------------------ 3. Markdown keeps text
async def test_html_in_a_reply_is_shown_as_text(env):
    async with one_turn(
        env,
        "how?",
        Reply(text="Wrap it in a <div> element and use <b>bold</b>."),
        Reply(text="<think>pondering</think>The answer is 4."),
    ) as (app, pilot):
        await send(app, pilot, "2+2?")
        first, second = app.conversation_view.chat_log.query(AssistantBubble)
        for bubble, expected in (
            (first, "Wrap it in a <div> element and use <b>bold</b>."),
            (second, "The answer is 4"),
        ):
            shown = " ".join(str(block._content) for block in bubble.query_one(Markdown).children)
            assert expected in shown, shown
        # The <think> part is the model's reasoning (issue 8): nothing is eaten, it sits in the Thinking block.
        (thinking,) = second.query("ThinkingBlock")
        assert thinking.text.strip() == "pondering"
        await app.conversation_view.open_conversation(app.conversation_id)  # from the database: the same
        await pilot.pause()
        reopened = app.conversation_view.chat_log.query(AssistantBubble).first()
        assert "<div>" in " ".join(str(b._content) for b in reopened.query_one(Markdown).children)


async def test_brackets_survive_in_search_hits_and_slash_hints(env):
    conversation = history.new_conversation("brackets")
    history.add_message(conversation.id, "user", "the list [1, 2] and [bold]not bold[/bold] capybara")
    async with running(env) as (app, pilot):
        hits = [hit async for hit in HistorySearch(app.screen).search("capybara")]
        assert "[bold]not bold[/bold]" in str(hits[0].match_display)
        assert "[1, 2]" in str(hits[0].match_display)
        app.conversation_view.composer.load_text("/gen")
        await pilot.pause()
        hints = app.query_one(SlashHints)
        assert str(hints.get_option_at_index(0).prompt).startswith("/generate-image [n] <prompt>")


# ------------------------------------------------------------------ 5. focus
@pytest.mark.slow
async def test_closing_panels_and_modals_returns_focus_to_the_composer(env):
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+b")
        await pilot.pause()
        app.query_one("#field-base_url", Input).focus()
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert app.focused is app.conversation_view.composer
        await pilot.press("h", "i")
        assert app.conversation_view.composer.text == "hi" and app.profile.base_url == env.fake.base_url
        for key in ("ctrl+t", "ctrl+p", "ctrl+l"):
            await pilot.press(key)
            await until(pilot, lambda: app.screen is not app.screen_stack[0], what=f"{key} opened nothing")
            await pilot.press("escape")
            await until(
                pilot,
                lambda: app.screen is app.screen_stack[0] and app.focused is app.conversation_view.composer,
                what=f"after {key}, the composer has the focus again",
            )


# ------------------------------------------------------------------ 6. newer pages after a jump
async def test_after_a_jump_newer_pages_load_on_scroll_down(env):
    from tui_agent.ui.widgets.chat_log import PAGE

    conversation = history.new_conversation("long")
    ids = [
        history.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", f"message {i}").id
        for i in range(3 * PAGE)
    ]
    async with running(env) as (app, pilot):
        await app.jump_to_message(conversation.id, ids[10])
        await pilot.pause()
        log = app.conversation_view.chat_log
        assert log.has_newer and ids[-1] not in [getattr(w, "message_id", None) for w in log.children]
        for _ in range(300):  # a slow machine lays out one page per scroll (a bound for a failing test)
            log.scroll_end(animate=False)
            await pilot.pause(0.2)
            if not log.has_newer:
                break
        mounted = [getattr(w, "message_id", None) for w in log.children]
        assert not log.has_newer and mounted[-1] == ids[-1]
        assert mounted == sorted(mounted) and len(set(mounted)) == len(mounted)


async def test_sending_after_a_jump_shows_the_reply_at_the_end(env):
    conversation = history.new_conversation("long")
    ids = [history.add_message(conversation.id, "user", f"m{i}").id for i in range(50)]
    async with running(env) as (app, pilot):
        await app.jump_to_message(conversation.id, ids[3])
        await pilot.pause()
        await send(app, pilot, "latest")
        texts = [b.text for b in app.conversation_view.chat_log.query(UserBubble)]
        assert texts[-2:] == ["m49", "latest"]


# ------------------------------------------------------------------ 7. --profile is one-off
async def test_the_profile_option_applies_to_this_run_only(env):
    values = {k: v for k, v in profiles.profile_as_dict(env.profile).items() if k != "name"}
    profiles.create_profile("slow", values | {"chat_model": "slow-model"})
    async with running(env, profile_name="slow") as (app, pilot):
        await send(app, pilot, "hi")
        assert app.profile.name == "slow"
        assert Setting.get_by_id("active_profile").value == "test"
    assert env.fake.chat_requests[-1]["model"] == "slow-model"
    assert profiles.active_profile().name == "test"


# ------------------------------------------------------------------ 8. status line
@pytest.mark.slow
async def test_status_line_states(env):
    async with running(
        env,
        Reply(text="slow start", hang_s=1.0),
        Reply(text="x" * 400, chunk_size=4, chunk_delay_s=0.02),
        Reply(status=400, error_message="bad request"),
    ) as (app, pilot):
        assert status(app) == "chat-model · ready"
        app.conversation_view.composer.load_text("one")
        await pilot.press("enter")
        seen = set()
        for _ in range(200):
            await pilot.pause(0.02)
            seen.add(status(app))
            if not app.turns:
                break
        assert "chat-model · waiting for the first token · 0.0s" in seen
        assert status(app).startswith("chat-model · done in 0.0s")
        app.conversation_view.composer.load_text("two")
        await pilot.press("enter")
        streaming = set()
        for _ in range(400):
            await pilot.pause(0.02)
            if "streaming" in status(app):
                streaming.add(status(app))
            if not app.turns:
                break
        assert any(s.startswith("chat-model · streaming · ") and " tokens" in s for s in streaming), streaming
        await send(app, pilot, "three")
        assert status(app).startswith("error · ") and app.conversation_view.status_line.state == "error"
        other = history.new_conversation("other")
        await app.conversation_view.open_conversation(other.id)
        assert status(app) == "chat-model · ready"


async def test_status_line_connecting_then_offline(env):
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")
    async with running(env, check_endpoint=True) as (app, pilot):
        assert status(app).startswith("connecting to http://127.0.0.1:9/v1")
        await until(pilot, lambda: app.conversation_view.status_line.state == "offline")
        assert status(app).startswith("offline · no model answers at http://127.0.0.1:9/v1")


async def test_status_line_ready_once_the_endpoint_answers(env):
    async with running(env, check_endpoint=True) as (app, pilot):
        await until(pilot, lambda: app.conversation_view.status_line.state != "connecting")
        assert status(app) == "chat-model · ready"


# ------------------------------------------------------------------ 9. retry
async def test_retry_resends_the_failed_turn_without_a_second_user_message(env):
    async with one_turn(
        env, "tell me", Reply(text="partial", status=400, error_message="overloaded"), Reply(text="Here it is.")
    ) as (app, pilot):
        assert app.conversation_view.chat_log.query(ErrorCard)
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert [b.text for b in app.conversation_view.chat_log.query(UserBubble)] == ["tell me"]
        assert app.conversation_view.chat_log.query(AssistantBubble).last().text == "Here it is."
        assert status(app).startswith("chat-model · done")
    stored = rows(env.vault.db_path, "SELECT role, content FROM messages WHERE role IN ('user', 'assistant')")
    assert stored == [("user", "tell me"), ("assistant", "Here it is.")]
    assert [m["content"] for m in env.fake.chat_requests[-1]["messages"][1:]] == ["tell me"]
    assert ("Retry the failed turn", "retry_turn") in [(title, action) for title, action, _ in ACTIONS]


async def test_retry_after_a_reply_broke_off_does_not_send_the_broken_part(env):
    from helpers import make_loop

    conversation = history.new_conversation("broken").id
    history.add_message(conversation, "user", "explain")
    history.add_message(conversation, "assistant", "a long answer that bre", status="error")
    history.add_message(conversation, "error", "the reply broke off", status="error")
    env.fake.script(Reply(text="Whole answer."))
    loop = make_loop(env)
    try:
        retried = [event async for event in loop.retry_turn(conversation)]
        assert done(retried).status == "complete"
        assert [m["content"] for m in env.fake.chat_requests[-1]["messages"][1:]] == ["explain"]
        statuses = rows(env.vault.db_path, "SELECT role, status FROM messages WHERE role != 'error'")
        assert statuses == [("user", "complete"), ("assistant", "superseded"), ("assistant", "complete")]
        again = [event async for event in loop.retry_turn(conversation)]
        assert done(again).status == "error" and "nothing to retry" in again[0].message
    finally:
        await loop.aclose()


# ------------------------------------------------------------------ 10. small ones
async def test_a_failed_attach_gives_the_text_back_with_the_cursor_at_the_end(env):
    async with running(env) as (app, pilot):
        await send(app, pilot, "/attach missing.png what is this")
        assert app.conversation_view.composer.text == "/attach missing.png what is this"
        assert app.conversation_view.composer.cursor_location == app.conversation_view.composer.document.end


async def test_double_slash_sends_a_literal_slash(env):
    events = await run_turn(env, "//etc/hosts is a file")
    assert done(events).status == "complete"
    assert env.fake.chat_requests[0]["messages"][-1]["content"] == "/etc/hosts is a file"


async def test_searxng_without_url_fails_when_used(env):
    profiles.set_field(env.profile, "web_search_backend", "searxng")
    events = await run_turn(env, "/search cats")
    (finished,) = [e for e in events if type(e).__name__ == "ToolFinished"]
    assert "web_search_url" in finished.result.error


async def test_system_prompt_and_memory_are_multi_line_editors(env):
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+b")
        await settled(pilot, lambda: app.query("#field-memory"))  # read on the store's thread, then built
        for name in ("system_prompt", "memory"):
            area = app.query_one(f"#field-{name}", TextArea)
            area.focus()
            area.load_text(f"line one of {name}\nline two")
            app.conversation_view.composer.focus()
            await settled(pilot, lambda n=name: getattr(env.reload_profile(), n) == f"line one of {n}\nline two")


def test_conversation_titles_are_not_slash_commands():
    from tui_agent.core.store.history import _title_from

    assert _title_from("/imagine a red fox") == "a red fox"
    assert _title_from("/generate-image 3 castles at dusk") == "castles at dusk"
    assert _title_from("/attach media/uploads/a.png what is this") == "what is this"
    assert _title_from("/etc/hosts is a file") == "/etc/hosts is a file"
    assert _title_from("hello") == "hello"
    # a command's name is a word like any other without its slash
    assert _title_from("show me a long markdown answer") == "show me a long markdown answer"
    assert _title_from("Help with my essay") == "Help with my essay"


async def test_the_theme_chosen_is_remembered(env):
    async with running(env) as (app, pilot):
        app.theme = "nord"
        # Remembered on the store's thread: a loaded machine writes it later than a fixed pause.
        await until(pilot, lambda: settings.get_setting(settings.THEME_KEY) == "nord", what="the theme never saved")
    assert settings.get_setting(settings.THEME_KEY) == "nord"
    again = make(env)
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert again.theme == "nord"


async def test_notifications_are_plain_text(env):
    async with running(env) as (app, pilot):
        app.conversation_view.chat_log.notify("photo [draft].png is no longer in the vault\x1b]0;x\x07")
        await pilot.pause()
        (note,) = list(app._notifications)
        assert note.message == "photo [draft].png is no longer in the vault␛]0;x␇" and note.markup is False


async def test_waiting_seconds_count_up_while_no_token_comes(env):
    now = [100.0]
    async with running(env, clock=lambda: now[0], animate=True) as (app, pilot):
        app.conversation_view.status_line.waiting("chat-model", 100.0)
        assert status(app) == "chat-model · waiting for the first token · 0.0s"
        now[0] = 103.5
        await until(pilot, lambda: "3.5s" in status(app))
        assert status(app) == "chat-model · waiting for the first token · 3.5s"
