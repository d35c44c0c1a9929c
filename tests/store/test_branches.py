"""Regenerate and edit-and-resend: alternatives and branches, stored, and what the builder sends."""

from __future__ import annotations

import json
import sqlite3

import pytest
from backends import BOTH_BACKENDS
from fake_openai import Reply
from helpers import done, first_turn, on_loop, reply_id, run_turn, user_id

from tui_agent.core import events as ev
from tui_agent.core import export
from tui_agent.core.store import branches, history, migrations, open_database
from tui_agent.core.store.models import Message
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.registry import default_registry


def contents(request) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else "[parts]" for m in request["messages"][1:]]


def test_upgrade_makes_each_conversation_one_straight_branch(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    before = migrations.STEPS.index(migrations.V_BRANCHES)
    assert migrations.migrate(conn, target=before) == before
    now = "2025-01-01 00:00:00.000000"
    for title in ("a", "b"):
        conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES (?, ?, ?)", (title, now, now))
    for conversation, role, text in [
        (1, "user", "u1"),
        (2, "user", "x1"),
        (1, "assistant", "a1"),
        (2, "assistant", "y1"),
        (1, "user", "u2"),
    ]:
        conn.execute(
            "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            (conversation, role, text, now),
        )
    conn.commit()
    conn.close()

    db = open_database(path)
    try:
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM messages WHERE parent_id IS NULL").fetchone() == (5,)
        conn.close()
        assert [m.content for m in history.recent_messages(1)] == ["u1", "a1", "u2"]
        assert [m.content for m in history.recent_messages(2)] == ["x1", "y1"]
        assert history.add_message(1, "assistant", "a2").parent_id == 5
        assert [m.content for m in history.recent_messages(1)] == ["u1", "a1", "u2", "a2"]
    finally:
        db.close()


@BOTH_BACKENDS
async def test_regenerate_keeps_alternatives_and_later_context_uses_the_chosen_one(env):
    events, conversation_id = await first_turn(env, "hello", Reply(text="first answer"), Reply(text="second answer"))
    first = reply_id(events)

    events = await on_loop(env, lambda loop: loop.regenerate(first))
    assert isinstance(events[0], ev.BranchChanged) and done(events).status == "complete"
    second = reply_id(events)
    # The same turn again: the very same request.
    assert env.fake.chat_requests[1]["messages"] == env.fake.chat_requests[0]["messages"]
    assert [m.content for m in branches.siblings(second)] == ["first answer", "second answer"]
    assert [m.content for m in history.recent_messages(conversation_id)] == ["hello", "second answer"]

    env.fake.script(Reply(text="ok"))
    await run_turn(env, "and then?", conversation_id)
    assert contents(env.fake.chat_requests[2]) == ["hello", "second answer", "and then?"]

    branches.choose(first)
    assert [m.content for m in history.recent_messages(conversation_id)] == ["hello", "first answer"]
    await run_turn(env, "back on the first", conversation_id)
    assert contents(env.fake.chat_requests[3]) == ["hello", "first answer", "back on the first"]
    # Every stored row survives: the first user message, 2 alternatives, 2 later turns of 2 rows.
    assert Message.select().where(Message.conversation == conversation_id).count() == 7


@BOTH_BACKENDS
async def test_regenerating_the_reply_after_an_image_uses_the_vision_model_again(env):
    env.fake.script(Reply(text="A fox."), Reply(text="A red fox, again."))
    events = await run_turn(env, "/imagine a red fox")
    reply = reply_id(events)
    await on_loop(env, lambda loop: loop.regenerate(reply))
    first, again = env.fake.chat_requests
    assert again["model"] == first["model"] == "vision-model"
    assert again["messages"] == first["messages"]


@BOTH_BACKENDS
async def test_regenerate_refuses_what_is_not_a_reply(env):
    events = await run_turn(env, "hello")
    asked = user_id(events)
    events = await on_loop(env, lambda loop: loop.regenerate(asked))
    assert isinstance(events[0], ev.ErrorEvent) and "not an assistant reply" in events[0].message
    assert len(env.fake.chat_requests) == 1


@BOTH_BACKENDS
async def test_edit_and_resend_forks_and_the_old_branch_can_be_chosen_again(env):
    events, conversation_id = await first_turn(env, "a", Reply(text="A"), Reply(text="B"), Reply(text="C"))
    events = await run_turn(env, "b", conversation_id)
    b_id = user_id(events)

    events = await on_loop(env, lambda loop: loop.run_turn(conversation_id, "c", edit_of=b_id))
    assert any(isinstance(e, ev.BranchChanged) for e in events)
    c_id = user_id(events)
    assert contents(env.fake.chat_requests[2]) == ["a", "A", "c"]
    assert [m.content for m in branches.siblings(c_id)] == ["b", "c"]
    assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "c", "C"]

    branches.choose(b_id)
    assert [m.content for m in history.recent_messages(conversation_id)] == ["a", "A", "b", "B"]
    # memory_sql still sees every message of every branch.
    result = await default_registry().execute(
        "memory_sql",
        json.dumps({"query": "SELECT group_concat(content, ',') AS c FROM messages WHERE role = 'user'"}),
        ToolContext(env.vault, env.profile, None),
    )
    assert result.is_ok, result.error
    assert "a,b,c" in json.dumps(result.data)


@BOTH_BACKENDS
async def test_editing_the_first_message_starts_a_new_root(env):
    events, conversation_id = await first_turn(env, "a", Reply(text="A"), Reply(text="Z"))
    a_id = user_id(events)
    await on_loop(env, lambda loop: loop.run_turn(conversation_id, "z", edit_of=a_id))
    assert contents(env.fake.chat_requests[1]) == ["z"]
    assert [m.content for m in history.recent_messages(conversation_id)] == ["z", "Z"]
    assert [m.content for m in branches.siblings(a_id)] == ["a", "z"]


@BOTH_BACKENDS
async def test_json_export_keeps_every_branch_and_imports_them_back(env):
    events, conversation_id = await first_turn(env, "q", Reply(text="one"), Reply(text="two"))
    first = reply_id(events)
    await on_loop(env, lambda loop: loop.regenerate(first))
    data = export.to_json(conversation_id)
    assert [m["content"] for m in data["messages"]] == ["q", "one", "two"]
    new_id = export.import_json(env.vault, json.loads(json.dumps(data)))
    assert [m.content for m in history.recent_messages(new_id)] == ["q", "two"]
    reply = history.recent_messages(new_id)[-1]
    assert [m.content for m in branches.siblings(reply.id)] == ["one", "two"]


def _sqlite_steps(action) -> int:
    """SQLite virtual-machine steps (in thousands) an action runs: work, not time."""
    conn = Message._meta.database.connection()
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1000)
    try:
        action()
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def _bulk_conversation(count: int, *, explicit_parents: bool) -> int:
    """``count`` messages written as a straight branch: NULL parents (rows from before branches, or
    other writers), or each naming the one before it."""
    conversation = history.new_conversation(f"{count}").id
    conn = Message._meta.database.connection()
    rows = [(conversation, "user" if i % 2 == 0 else "assistant", f"m{i}", "x") for i in range(count)]
    conn.executemany("INSERT INTO messages(conversation_id, role, content, created_at) VALUES (?, ?, ?, ?)", rows)
    if explicit_parents:
        conn.execute(
            "UPDATE messages SET parent_id = COALESCE((SELECT max(p.id) FROM messages p WHERE p.conversation_id = "
            "messages.conversation_id AND p.id < messages.id), 0) WHERE conversation_id = ?",
            (conversation,),
        )
    conn.commit()
    return conversation


@pytest.mark.slow
def test_a_page_of_a_long_conversation_costs_what_a_page_of_a_short_one_costs(env):
    """Opening, paging up and building the context read one page's messages, not the whole branch."""
    for explicit in (False, True):
        short, long = (
            _bulk_conversation(60, explicit_parents=explicit),
            _bulk_conversation(6000, explicit_parents=explicit),
        )
        costs = {}
        for conversation in (short, long):
            newest = history.recent_messages(conversation, limit=20)
            assert [m.content for m in newest] == [
                f"m{i}" for i in range(40 if conversation == short else 5980, 6000 if conversation == long else 60)
            ]
            older = history.recent_messages(conversation, limit=20, before_id=newest[0].id)
            assert len(older) == 20 and older[-1].id < newest[0].id
            costs[conversation] = _sqlite_steps(
                lambda c=conversation, n=newest: (
                    history.recent_messages(c, limit=20),
                    history.recent_messages(c, limit=20, before_id=n[0].id),
                    branches.fork_parents(c, [m.parent_id for m in n]),
                )
            )
        assert costs[long] <= 2 * costs[short] + 2, (explicit, costs)


@pytest.mark.slow
def test_a_page_deep_in_a_long_conversation_costs_what_a_page_at_its_end_costs(env):
    """Paging up walked the branch from its last message down to the page: 26 ms a page near the
    first of 5,000 messages. The page above a message on screen is walked up from that message."""
    for explicit in (False, True):
        conversation = _bulk_conversation(6000, explicit_parents=explicit)
        ids = [m.id for m in history.recent_messages(conversation)]
        for anchor in (ids[-20], ids[3000], ids[100], ids[5]):
            page = [m.id for m in history.messages_before(anchor, 20)]
            assert page == [m.id for m in history.recent_messages(conversation, limit=20, before_id=anchor)]
        assert [m.id for m in history.messages_before(ids[5], 20)] == ids[:5]
        assert history.messages_before(ids[0], 20) == []
        last_page, early = ids[-20], ids[100]
        at_end = _sqlite_steps(lambda m=last_page: history.messages_before(m, 20))
        deep = _sqlite_steps(lambda m=early: history.messages_before(m, 20))
        from_leaf = _sqlite_steps(lambda c=conversation, m=early: history.recent_messages(c, limit=20, before_id=m))
        assert deep <= 2 * at_end + 2 < from_leaf, (explicit, at_end, deep, from_leaf)


@BOTH_BACKENDS
def test_the_page_above_a_message_follows_its_branch(env):
    """A fork: 1-2-3-4-5-6 and, edited after 3, 3-7-8 (the active one). Above 8: its own branch."""
    conversation = history.new_conversation("forked").id
    ids = []
    for i, parent in enumerate([0, 1, 2, 3, 4, 5, 3, 7]):
        row = Message.create(
            conversation=conversation,
            role="user" if i % 2 == 0 else "assistant",
            content=f"m{i + 1}",
            created_at="x",
            parent_id=ids[parent - 1] if parent else 0,
        )
        ids.append(row.id)
    branches.set_leaf(conversation, ids[7])
    active = [m.content for m in history.recent_messages(conversation)]
    assert active == ["m1", "m2", "m3", "m7", "m8"]
    assert [m.content for m in history.messages_before(ids[7], 3)] == ["m2", "m3", "m7"]
    assert [m.content for m in history.messages_before(ids[6], 20)] == ["m1", "m2", "m3"]
    assert [m.content for m in history.messages_before(ids[5], 2)] == ["m4", "m5"]  # the other branch's own
