"""What the app says is what happens (issue 25, item 10): the approval wait, a memory_sql UPDATE
on screen, the palette's F3, the first-run card's model."""

from __future__ import annotations

import json

from fake_openai import Reply
from pilot_helpers import make, running, until

from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.core.store.models import Message
from tui_agent.ui.commands import ACTIONS
from tui_agent.ui.screens.approval import ApprovalScreen
from tui_agent.ui.widgets.bubbles import UserBubble


async def test_the_status_says_it_waits_for_approval_and_the_edited_message_shows(env):
    conversation = history.new_conversation("c")
    original = history.add_message(conversation.id, "user", "original text")
    history.add_message(conversation.id, "assistant", "a reply")
    query = f"UPDATE messages SET content = 'edited text' WHERE id = {original.id}"
    async with running(env, Reply(tool_calls=[("memory_sql", json.dumps({"query": query}))]), "Done.") as (app, pilot):
        app.conversation_view.composer.load_text("fix my first message")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        status = str(app.conversation_view.status_line.render())
        assert "waiting for your approval" in status and "running" not in status
        await until(pilot, lambda: app.screen.armed)  # keys in the dialog's first half second are ignored
        await pilot.press("y")
        await until(pilot, lambda: not app.turns)
        await pilot.pause()
        assert Message.get_by_id(original.id).content == "edited text"
        texts = [b.text for b in app.conversation_view.chat_log.query(UserBubble)]
        assert texts[0] == "edited text" and "original text" not in texts


def test_the_palette_says_f3_opens_the_in_app_view():
    (description,) = [d for _, action, d in ACTIONS if action == "open_image"]
    assert "system viewer" not in description and "full size in the app" in description


async def test_the_first_run_card_names_the_profiles_model(env):
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")
    profiles.set_field(env.profile, "chat_model", "mistral-small3.2")  # not the default profile's model
    app = make(env)
    app.check_endpoint = True
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.conversation_view.chat_log.query(".setup-card")))
        card = str(app.conversation_view.chat_log.query_one(".setup-card").render())
        assert "ollama pull mistral-small3.2" in card and "qwen3" not in card


async def test_an_image_shown_with_slash_show_is_not_said_to_have_been_shown_to_a_text_only_model(env):
    from fake_openai import png_bytes
    from helpers import done, run_turn

    (env.vault.media / "x").mkdir(parents=True, exist_ok=True)
    (env.vault.media / "x/a.png").write_bytes(png_bytes((1, 2, 3)))
    events = await run_turn(env, "/show media/x/a.png")
    await run_turn(env, "what was it?", done(events).conversation_id)
    assert [r["model"] for r in env.fake.chat_requests] == ["chat-model", "chat-model"]  # never any pixels
    sent = json.dumps([r["messages"] for r in env.fake.chat_requests])
    assert "shown to you" not in sent and "image_url" not in sent
    assert "[image: media/x/a.png (image data not sent with this request)]" in sent


async def test_a_new_conversation_shows_its_title_in_the_header_and_the_sidebar(env):
    from textual.widgets import Label, ListView

    async with running(env, "hi") as (app, pilot):
        await pilot.press("ctrl+b")
        await until(pilot, lambda: bool(app.query(ListView)))
        app.conversation_view.composer.load_text("plan a trip to Lisbon")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns)
        await pilot.pause()
        assert app.sub_title == "plan a trip to Lisbon"
        labels = [str(label.render()) for label in app.query_one("#conversation-list", ListView).query(Label)]
        assert labels == ["plan a trip to Lisbon"]
