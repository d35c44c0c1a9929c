"""The line above the oldest message the model still sees shows whenever older ones were left
out (issue 25, item 9)."""

from __future__ import annotations

from pilot_helpers import running, until

from tui_agent.core import profiles
from tui_agent.core.store import history


def small_budget(env, tokens: int = 500) -> None:
    profiles.set_field(env.profile, "context_budget_tokens", str(tokens))
    env.reload_profile()


def chat(turns: int) -> int:
    conversation = history.new_conversation("long")
    for i in range(turns):
        history.add_message(conversation.id, "user", f"question {i} " + "word " * 80)
        history.add_message(conversation.id, "assistant", f"answer {i} " + "word " * 80)
    return conversation.id


def marker_before(app) -> str | None:
    log = app.conversation_view.chat_log
    markers = list(log.query(".window-marker"))
    if not markers:
        return None
    following = log.children[log.children.index(markers[0]) + 1]
    return getattr(following, "text", None)


async def test_the_marker_shows_after_a_turn_in_a_long_conversation(env):
    small_budget(env)
    chat(6)
    async with running(env, "short") as (app, pilot):
        app.conversation_view.composer.load_text("hi")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns)
        await pilot.pause()
        sent = env.fake.chat_requests[0]["messages"]
        first_sent = sent[1]["content"]
        assert first_sent != "question 0 " + "word " * 80  # the budget left the oldest out
        assert marker_before(app) == first_sent


async def test_the_marker_shows_when_a_conversation_is_opened(env):
    small_budget(env)
    chat(6)
    async with running(env, "short") as (app, pilot):
        await until(pilot, lambda: marker_before(app) is not None)
