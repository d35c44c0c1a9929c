"""The loop's events carry the stored message the screen draws (its id, text, attachments, its
alternatives and place among them, the conversation's title): the turn's view draws a turn from
the events alone and never reads back from the store what the loop just wrote (issue 28)."""

from __future__ import annotations

from fake_openai import Reply, png_bytes
from helpers import first_turn, on_loop, run_turn
from pilot_helpers import running
from test_import_graph import import_graph

from tui_agent.core import events as ev
from tui_agent.core.store import history
from tui_agent.ui.turn_view import TurnView
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble


def first(events: list, kind: type):
    return next(e for e in events if isinstance(e, kind))


async def test_turn_started_carries_the_stored_user_message_and_the_title(env):
    (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
    events = await run_turn(env, "/attach media/uploads/a.png look at this")
    started = first(events, ev.TurnStarted)
    stored = history.recent_messages(started.conversation_id)[0]
    assert started.message == ev.StoredMessage(stored.id, "look at this", ["media/uploads/a.png"], [])
    assert started.message.position is None  # no alternatives: no "◀ n / N ▶"
    assert started.title == history.get_conversation(started.conversation_id).title != ""


async def test_an_edit_carries_its_alternatives_and_its_place(env):
    events, conversation_id = await first_turn(env, "a", Reply(text="A"), Reply(text="B"))
    a_id = first(events, ev.TurnStarted).user_message_id
    events = await on_loop(env, lambda loop: loop.run_turn(conversation_id, "a again", edit_of=a_id))
    message = first(events, ev.TurnStarted).message
    assert message.content == "a again"
    assert message.alternatives == (a_id, message.id) and message.position == 2


async def test_a_regenerated_reply_carries_its_alternatives(env):
    env.fake.script(Reply(text="first answer"), Reply(text="second answer"))
    events = await run_turn(env, "hello")
    reply = first(events, ev.AssistantFinished)
    assert reply.alternatives == ()  # a first reply stands alone
    events = await on_loop(env, lambda loop: loop.regenerate(reply.message_id))
    again = first(events, ev.AssistantFinished)
    assert again.alternatives == (reply.message_id, again.message_id)


def test_the_turns_view_never_imports_the_store() -> None:
    graph = import_graph()
    for module in ("tui_agent.ui.turn_view", "tui_agent.ui.turn_runner"):
        assert not [m for m in graph[module] if m.startswith("tui_agent.core.store")], module


async def test_the_view_draws_a_turn_from_its_events_alone(env):
    """Ids the store does not have: what is drawn can only come from the events."""
    conversation = history.new_conversation("shown").id
    async with running(env, size=(100, 30)) as (app, pilot):
        host = app.conversation_view
        await host.open_conversation(conversation)
        view = TurnView(host, conversation)
        message = ev.StoredMessage(9001, "only on the event", [], [9000, 9001])
        await view.handle(ev.TurnStarted(conversation, 9001, message, "Its title"))
        await view.handle(ev.AssistantStarted(model="m"))
        await view.handle(ev.TextDelta("The reply."))
        await view.handle(ev.AssistantFinished(9003, "The reply.", "m", "complete", alternatives=[9002, 9003]))
        await pilot.pause()
        (user,) = app.query(UserBubble)
        assert user.text == "only on the event" and user.message_id == 9001
        assert user.query_one(AlternativesBar).ids == [9000, 9001]
        (bubble,) = app.query(AssistantBubble)
        assert bubble.message_id == 9003 and bubble.query_one(AlternativesBar).ids == [9002, 9003]
        assert app.sub_title == "Its title"
