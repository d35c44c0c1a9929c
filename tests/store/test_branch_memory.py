"""Switching back to a branch shows the alternative chosen there (issue 37 item 4): on branch 1 the
user picked reply 1/2; after an edit made branch 2, going back to branch 1 shows 1/2 again, not the
newest reply (2/2)."""

from __future__ import annotations

from backends import BOTH_BACKENDS
from fake_openai import Reply
from helpers import done, make_loop, run_turn

from tui_agent.core import events as ev
from tui_agent.core.store import branches, history


async def drain(gen) -> list:
    return [event async for event in gen]


@BOTH_BACKENDS
async def test_going_back_to_a_branch_shows_the_alternative_chosen_there(env):
    env.fake.script(Reply(text="A"), Reply(text="B1"), Reply(text="B2"), Reply(text="C"))
    events = await run_turn(env, "a")
    conversation_id = done(events).conversation_id
    events = await run_turn(env, "b", conversation_id)
    b_id = next(e for e in events if isinstance(e, ev.TurnStarted)).user_message_id
    b1_id = next(e for e in events if isinstance(e, ev.AssistantFinished)).message_id
    loop = make_loop(env)
    try:
        await drain(loop.regenerate(b1_id))  # B2: alternative 2/2
        branches.choose(b1_id)  # the user goes back to 1/2 and stays there
        assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "b", "B1"]
        await drain(loop.run_turn(conversation_id, "c", edit_of=b_id))  # branch 2
    finally:
        await loop.aclose()
    assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "c", "C"]
    c_id = history.recent_messages(conversation_id)[2].id
    branches.choose(b_id)  # back to branch 1
    assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "b", "B1"]
    branches.choose(c_id)  # and to branch 2 again: as it was left
    assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "c", "C"]
    # A branch never visited goes down to its newest message, as before.
    branches.choose(history.recent_messages(conversation_id)[0].id)
    assert [m.content for m in history.recent_messages(conversation_id)][:2] == ["a", "A"]
