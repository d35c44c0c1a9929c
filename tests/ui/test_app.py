"""Pilot tests: whole turns against the loopback server, asserting on the database and widgets."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from fake_openai import Reply, png_bytes
from helpers import rows
from memory_sql_helpers import edit_first_message
from pilot_helpers import children, one_turn, running, send, settle, steady_screen, text_backgrounds, until
from textual.widgets import Collapsible, Input, ListView

from tui_agent.core import profiles
from tui_agent.core.store import history, worker
from tui_agent.ui.screens.dialogs import ApprovalScreen
from tui_agent.ui.widgets import chat_log as chat_log_module
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard, UserBubble
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.chat_log import PAGE
from tui_agent.ui.widgets.tool_block import ToolBlock, ToolResultView


async def test_plain_reply(env):
    async with one_turn(env, "hello", Reply(text="# Title\n\nSome *markdown* and `code`.", chunk_size=2)) as (
        app,
        _pilot,
    ):
        (user,) = children(app, UserBubble)
        (bubble,) = children(app, AssistantBubble)
        assert user.text == "hello"
        assert bubble.text == "# Title\n\nSome *markdown* and `code`."
        assert app.conversation_view.composer.text == ""
        assert "in / " in str(app.conversation_view.status_line.render())
    assert rows(env.vault.db_path, "SELECT role, content FROM messages") == [
        ("user", "hello"),
        ("assistant", "# Title\n\nSome *markdown* and `code`."),
    ]


async def test_imagine_shows_a_carousel_and_the_vision_follow_up(env):
    async with one_turn(env, "/imagine a fox", "Two foxes.") as (app, pilot):
        (view,) = children(app, ToolResultView)
        carousel = view.query_one(ImageCarousel)
        assert len(carousel.paths) == 2 and carousel.index == 0
        assert str(carousel.query_one(".counter").render()) == "1 / 2"
        carousel.focus()
        await pilot.press("right")
        assert carousel.index == 1
        # The counter changes with the picture shown (after the slot's change, which waits for the
        # first picture's decoding off the event loop on a loaded machine).
        await until(pilot, lambda: str(carousel.query_one(".counter").render()) == "2 / 2", 30, "the counter")
        await pilot.press("right")
        assert carousel.index == 0
        assert view.block.collapsed and view.block.title == "Tool result · generate_image · ✓ ok"
        assert "vision-model" in str(app.conversation_view.status_line.render())
    assert env.fake.chat_requests[0]["model"] == "vision-model"


@pytest.mark.slow
async def test_search_sql_show_and_tool_errors_render_as_blocks(env):
    (env.vault.media / "a.png").write_bytes(png_bytes())
    async with one_turn(
        env,
        "how many messages?",
        Reply(tool_calls=[("memory_sql", json.dumps({"query": "SELECT count(*) FROM messages"}))]),
        Reply(text="Counted."),
    ) as (app, pilot):
        await send(app, pilot, "/show media/a.png")
        await send(app, pilot, "/search anything")  # duckduckgo is unreachable here: an error block
        blocks = children(app, ToolBlock)
        assert [b.tool_name for b in blocks] == ["memory_sql", "show_image", "web_search"]
        assert [b.tool_status for b in blocks] == ["ok", "ok", "error"]
        assert blocks[2].has_class("-error")
        await pilot.press("ctrl+o")
        assert not any(b.collapsed for b in app.conversation_view.chat_log.query(Collapsible))
        await pilot.press("ctrl+o")
        assert all(b.collapsed for b in app.conversation_view.chat_log.query(Collapsible))
        blocks[0].query_one("CollapsibleTitle").focus()
        await pilot.press("enter")
        assert not blocks[0].collapsed


async def test_sql_update_asks_for_approval(env):
    env.fake.script(*edit_first_message())
    async with running(env) as (app, pilot):
        await send(app, pilot, "fix my first message", wait=False)
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.question.startswith("This UPDATE changes the content of 1 message.")
        assert "UPDATE messages" not in app.screen.question
        await until(pilot, lambda: app.screen.armed)
        await pilot.press("y")
        await settle(app, pilot)
    assert history.recent_messages(1)[0].content == "edited"
    assert len(history.list_revisions(1)) == 1


async def test_cancel_mid_stream_keeps_the_partial_reply(env):
    async with running(env, Reply(text="word " * 300, chunk_size=5, chunk_delay_s=0.02)) as (app, pilot):
        await send(app, pilot, "long story", wait=False)
        for _ in range(200):
            await pilot.pause(0.05)
            bubbles = children(app, AssistantBubble)
            if bubbles and len(bubbles[0].text) > 20:
                break
        await pilot.press("escape")
        await settle(app, pilot)
        (bubble,) = children(app, AssistantBubble)
        assert bubble.status == "cancelled"
        assert "(cancelled)" in str(bubble.query_one(".reply-status").render())
    (stored,) = rows(env.vault.db_path, "SELECT status, content FROM messages WHERE role = 'assistant'")
    assert stored[0] == "cancelled" and 0 < len(stored[1]) < 1500


async def test_a_reply_cancelled_as_another_conversation_opens_leaves_that_one_ready(env):
    """Esc, then at once another conversation: the cancelled turn ends after the other one is on
    screen (its reply is saved first); its "cancelled" is not the other conversation's status."""
    async with running(env, Reply(text="word " * 300, chunk_size=5, chunk_delay_s=0.02)) as (app, pilot):
        await send(app, pilot, "long story", wait=False)
        await until(pilot, lambda: any(len(b.text) > 20 for b in children(app, AssistantBubble)))
        view = app.conversation_view
        release = threading.Event()
        holding = asyncio.ensure_future(worker.run(release.wait, 600))  # the reply's save waits for it
        for turn in list(app.turns.values()):
            turn.cancel()
        # reads nothing from the store: done long before the held store's 600 s, however slow the machine
        await asyncio.wait_for(view.action_new_conversation(), 120)
        assert app.turns  # the cancelled turn has not ended: it saves its reply first
        release.set()
        await holding
        await until(pilot, lambda: not app.turns)
        await settle(app, pilot)
        assert view.conversation_id is None
        line = str(app.query_one("#status").render())
        assert "cancelled" not in line and line.endswith("· ready"), line
    (stored,) = rows(env.vault.db_path, "SELECT status FROM messages WHERE role = 'assistant'")
    assert stored == ("cancelled",)


async def test_the_app_ends_after_the_turns_it_cancelled_have_stored_their_replies(env, monkeypatch):
    """The app ends while a reply streams and one of the reply's flushes is still on its way to a
    slow store: the reply's last write ("cancelled") waits for that flush. The app's end waits for
    the turn (bounded), then for the store: when it is over, the turn has ended and its reply is
    stored as cancelled, not left "streaming" for the next start to find."""
    from tui_agent.core import loop as loop_module
    from tui_agent.core import turn_guard
    from tui_agent.ui import app_end
    from tui_agent.ui.app import AgentApp

    monkeypatch.setattr(loop_module, "FLUSH_INTERVAL_S", 0.0)  # each piece of the reply starts a flush
    # The limits bound a store that hangs; this one answers (however slow the machine).
    monkeypatch.setattr(turn_guard, "LAST_WRITE_S", 600.0)
    monkeypatch.setattr(app_end, "STORE_DRAIN_S", 600.0)
    release = threading.Event()
    at_end: list[tuple[list[object], list[tuple[str]]]] = []
    unmount = AgentApp.on_unmount

    async def observed(self: AgentApp) -> None:
        threading.Timer(0.3, release.set).start()  # the store is slow, not gone
        await unmount(self)
        at_end.append(
            (list(self.turns), rows(env.vault.db_path, "SELECT status FROM messages WHERE role = 'assistant'"))
        )

    monkeypatch.setattr(AgentApp, "on_unmount", observed)
    async with running(env, Reply(text="word " * 300, chunk_size=5, chunk_delay_s=0.02)) as (app, pilot):
        await send(app, pilot, "long story", wait=False)
        await until(pilot, lambda: any(len(b.text) > 20 for b in children(app, AssistantBubble)))
        holding = asyncio.ensure_future(worker.run(release.wait, 600))  # the store's thread is busy
        (bubble,) = children(app, AssistantBubble)
        shown = len(bubble.text)
        # Pieces that came after: a flush is on its way, behind the busy store.
        await until(pilot, lambda: len(bubble.text) > shown + 50)
        app.exit()
    await holding
    assert at_end == [([], [("cancelled",)])]


@pytest.mark.slow
async def test_switching_conversations_while_a_reply_streams(env):
    other = history.new_conversation("other")
    history.add_message(other.id, "user", "old question")
    history.add_message(other.id, "assistant", "old answer")
    first = history.new_conversation("first")
    async with running(env, Reply(text="streamed " * 100, chunk_size=9, chunk_delay_s=0.01)) as (app, pilot):
        assert app.conversation_id == first.id
        await send(app, pilot, "stream please", wait=False)
        await until(pilot, lambda: any(b.text for b in children(app, AssistantBubble)), what="no streamed text")
        await app.conversation_view.open_conversation(other.id)
        await until(pilot, lambda: [b.text for b in children(app, AssistantBubble)] == ["old answer"])
        await pilot.pause(0.2)  # and the stream still running elsewhere does not come into it
        assert [b.text for b in children(app, AssistantBubble)] == ["old answer"]
        await settle(app, pilot)
        assert [b.text for b in children(app, AssistantBubble)] == ["old answer"]
        await app.conversation_view.open_conversation(first.id)
        (bubble,) = children(app, AssistantBubble)
        assert bubble.text == "streamed " * 100
    assert rows(env.vault.db_path, f"SELECT count(*) FROM messages WHERE conversation_id = {other.id}") == [(2,)]


@pytest.mark.slow
async def test_editing_a_profile_field(env):
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+b")
        await pilot.pause()
        field = app.query_one("#field-temperature", Input)
        field.focus()
        field.value = "7"
        await pilot.press("enter")
        assert str(app.query_one("#error-temperature").render()) == "temperature: must be between 0 and 2, got 7.0"
        assert field.has_class("-invalid")
        assert env.reload_profile().temperature == 0.7
        field.value = "0.3"
        await pilot.press("enter")
        assert str(app.query_one("#error-temperature").render()) == ""
        assert env.reload_profile().temperature == 0.3
        chat = app.query_one("#field-chat_model", Input)
        chat.value = "another-model"
        chat.focus()
        await pilot.press("tab")  # leaving the field saves it
        assert env.reload_profile().chat_model == "another-model"


@pytest.mark.slow
async def test_conversation_list_switch_rename_delete(env):
    a = history.new_conversation("alpha")
    history.add_message(a.id, "user", "in alpha")
    b = history.new_conversation("beta")
    history.add_message(b.id, "user", "in beta")
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+b")
        await pilot.pause()
        listing = app.query_one("#conversation-list", ListView)
        assert len(listing.children) == 2
        listing.focus()
        listing.index = 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.conversation_id == a.id
        assert [u.text for u in children(app, UserBubble)] == ["in alpha"]
        await pilot.click("#conv-rename")
        await pilot.pause()
        app.screen.query_one(Input).value = "renamed"
        await pilot.press("enter")
        await pilot.pause()
        assert history.get_conversation(a.id).title == "renamed"
        await pilot.click("#conv-delete")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert [c.id for c in history.list_conversations()] == [b.id]
        assert app.conversation_id is None


async def test_long_conversation_mounts_a_page_and_loads_older(env, monkeypatch):
    monkeypatch.setattr(chat_log_module, "PREFETCH_AFTER_S", 3600)  # only the loads this test asks for
    conversation = history.new_conversation("long")
    db = history.Message._meta.database
    with db.atomic():
        for i in range(300):
            history.Message.create(
                conversation=conversation.id,
                role="user" if i % 2 == 0 else "assistant",
                content=f"message {i} " + "lorem " * 50,
            )
    async with running(env) as (app, pilot):
        await pilot.pause()
        first = len(app.conversation_view.chat_log.children)  # what fills the view; far fewer than 300
        assert 2 <= first < PAGE
        loaded = await app.conversation_view.chat_log.load_older()
        assert loaded == PAGE and len(app.conversation_view.chat_log.children) == first + PAGE
        await app.jump_to_message(conversation.id, 5)
        await pilot.pause()
        found = app.conversation_view.chat_log.query(".-found")
        assert len(found) == 1 and found.first().message_id == 5


async def test_a_message_found_is_marked_behind_its_text_too(env):
    """A history-search hit on a message already on screen: the mark's background is behind the
    text as around it (the message was drawn before: its widgets cached the old background), a
    user's message and an error card too (their own backgrounds outranked the mark's)."""
    conversation = history.new_conversation("short")
    asked = history.add_message(conversation.id, "user", "Pick a fruit.")
    answered = history.add_message(conversation.id, "assistant", "**An apple**, or a pear.")
    failed = history.add_message(conversation.id, "error", "The fruit server went away.")
    async with running(env) as (app, pilot):
        log = app.conversation_view.chat_log
        await until(pilot, lambda: len(log.query(".bubble")) == 2 and len(log.query(".error-card")) == 1)
        await steady_screen(app, pilot)
        for message in (asked, answered, failed):

            def shown(message_id: int = message.id) -> Any:
                return next(w for w in log.children if getattr(w, "message_id", None) == message_id)

            plain = shown().visual_style.background.rich_color
            await app.jump_to_message(conversation.id, message.id)  # the conversation opened again
            await until(pilot, lambda: shown().has_class("-found"))
            await steady_screen(app, pilot)
            mark = shown().visual_style.background.rich_color
            assert mark != plain
            assert text_backgrounds(shown()) == {mark}


async def test_a_search_hit_stays_marked_until_the_next_message_is_sent(env):
    """The mark shows which message the search jumped to while the user reads around it; sending a
    message (which follows the new reply at the end) takes it away, its text's background too."""
    conversation = history.new_conversation("short")
    asked = history.add_message(conversation.id, "user", "Pick a fruit.")
    history.add_message(conversation.id, "assistant", "**An apple**, or a pear.")
    async with running(env) as (app, pilot):
        log = app.conversation_view.chat_log
        await until(pilot, lambda: len(log.query(".bubble")) == 2)

        def shown() -> Any:
            return next(w for w in log.children if getattr(w, "message_id", None) == asked.id)

        await app.jump_to_message(conversation.id, asked.id)
        await until(pilot, lambda: shown().has_class("-found"))
        await steady_screen(app, pilot)
        marked = shown().visual_style.background.rich_color
        await pilot.pause(0.3)  # the user reads on: the mark stays
        assert shown().has_class("-found")
        await send(app, pilot, "And a plum?")
        await steady_screen(app, pilot)
        assert not log.query(".-found")
        plain = shown().visual_style.background.rich_color
        assert plain != marked and text_backgrounds(shown()) == {plain}


async def test_huge_paste_is_refused_and_kept(env):
    async with running(env) as (app, pilot):
        text = "x" * 250_000
        app.conversation_view.composer.load_text(text)
        await pilot.press("enter")
        await pilot.pause()
        assert app.conversation_view.composer.text == text
    assert rows(env.vault.db_path, "SELECT count(*) FROM messages") == [(0,)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/frobnicate now", "unknown command /frobnicate"),
        ("/attach /nonexistent/picture.png describe this please", "no such file: /nonexistent/picture.png"),
    ],
)
@pytest.mark.slow
async def test_a_refused_message_shows_an_error_card_and_keeps_the_text(env, text, expected):
    async with running(env) as (app, pilot):
        await send(app, pilot, text)
        (card,) = children(app, ErrorCard)
        assert expected in str(card.render())
        assert app.conversation_view.composer.text == text
    assert rows(env.vault.db_path, "SELECT count(*) FROM messages") == [(0,)]


@pytest.mark.slow
async def test_unreachable_endpoint_shows_setup_card_and_error_card(env):
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")
    async with running(env, check_endpoint=True) as (app, pilot):
        await until(pilot, lambda: app.conversation_view.chat_log.query(".setup-card"))
        card = app.conversation_view.chat_log.query_one(".setup-card")
        assert "OPENAI_API_KEY" in str(card.render()) and "ollama serve" in str(card.render())
        await send(app, pilot, "hello")
        (error,) = children(app, ErrorCard)
        assert "Can't reach the model" in str(error.render())
    assert rows(env.vault.db_path, "SELECT role FROM messages") == [("user",), ("error",)]


@pytest.mark.parametrize("key", ["ctrl+up"])
async def test_history_recall(env, key):
    """Ctrl+Up recalls earlier messages (Up on an empty composer moves into the messages instead)."""
    async with running(env) as (app, pilot):
        await send(app, pilot, "first message")
        await send(app, pilot, "second message")
        await pilot.press(key)
        assert app.conversation_view.composer.text == "second message"
        await pilot.press(key)
        assert app.conversation_view.composer.text == "first message"
        await pilot.press("down")
        assert app.conversation_view.composer.text == "second message"


async def test_slash_completion(env):
    async with running(env) as (app, pilot):
        await pilot.press("/", "i", "m")
        await pilot.pause()
        hints = app.query_one("#slash-hints")
        assert hints.has_class("-visible") and hints.option_count == 1
        await pilot.press("tab")
        assert app.conversation_view.composer.text == "/imagine "
        await asyncio.sleep(0)


@pytest.mark.slow
async def test_attach_picker_then_send(env, tmp_path):
    picture = tmp_path / "holiday.png"
    picture.write_bytes(png_bytes((250, 200, 10)))
    async with running(env, "A yellow square.") as (app, pilot):
        await pilot.press("ctrl+t")
        await pilot.pause()
        field = app.screen.query_one("#attach-input", Input)
        field.value = str(picture)
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_view.pending_attachments)
        assert app.conversation_view.pending_attachments[0].startswith("media/uploads/holiday-")
        assert "holiday-" in str(app.query_one("#pending-attachments").render())
        await send(app, pilot, "what is this?")
        (user,) = children(app, UserBubble)
        assert user.text == "what is this?" and len(user.images) == 1
        assert not app.conversation_view.pending_attachments
    content = env.fake.chat_requests[0]["messages"][-1]["content"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.slow
async def test_log_panel_shows_the_image_tool_lines(env):
    async with one_turn(env, "/imagine a log line", "ok") as (app, pilot):
        from tui_agent.ui.screens.log_screen import LogScreen

        await pilot.press("ctrl+l")

        def log_text() -> str:
            return "\n".join(app.screen.query_one("#log-view").lines) if isinstance(app.screen, LogScreen) else ""

        await until(pilot, lambda: "Selected model: flux2-test" in log_text(), what="the log's lines shown")
        text = log_text()
        assert "[IMAGE TOOL]" in text and "Selected model: flux2-test" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LogScreen)


async def test_history_search_provider_finds_and_jumps(env):
    from tui_agent.ui.commands import HistorySearch

    conversation = history.new_conversation("search me")
    target = history.add_message(conversation.id, "user", "the capybara is the largest rodent")
    history.new_conversation("other")
    async with running(env) as (app, pilot):
        provider = HistorySearch(app.screen)
        hits = [hit async for hit in provider.search("capybara")]
        assert len(hits) == 1 and "capybara" in str(hits[0].match_display)
        await hits[0].command()
        await pilot.pause()
        assert app.conversation_id == conversation.id
        found = app.conversation_view.chat_log.query(".-found")
        assert found.first().message_id == target.id
