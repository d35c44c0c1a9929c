"""A finished reply must stay ``complete`` when the turn is cancelled (or closed) after it finished.

Seen in kitty: 3 of 23 image turns had their reply stored whole but with status ``cancelled``
and nothing on screen, with no key pressed. The reply's row is marked ``complete`` and then
``AssistantFinished`` is yielded from inside ``_request``'s try block; anything that ends the
turn while the UI is still handling that event (the worker cancelled by a stray Escape from a
terminal reply, or the generator closed because the UI raised) threw CancelledError /
GeneratorExit into that try, and its handler rewrote the finished row as ``cancelled``.
"""

from __future__ import annotations

import asyncio
import gc

from fake_openai import Reply
from helpers import make_loop, rows
from pilot_helpers import running, until
from textual.widgets import Markdown

from tui_agent.core import events as ev
from tui_agent.ui.turn_view import TurnView
from tui_agent.ui.widgets.bubbles import AssistantBubble


async def finalized() -> None:
    """Let asyncio close the inner generators the outer one left suspended (its finalizer hook)."""
    gc.collect()
    for _ in range(5):
        await asyncio.sleep(0.02)


async def test_closing_the_turn_right_after_the_reply_finished_keeps_it_complete(env):
    env.fake.script(Reply(text="A whole reply.", chunk_size=4))
    loop = make_loop(env)
    turn = loop.run_turn(None, "hi")
    try:
        async for event in turn:
            if isinstance(event, ev.AssistantFinished):
                break  # the consumer stops here (cancelled, or failed while showing the reply)
    finally:
        await turn.aclose()
        await loop.aclose()
        await finalized()
    assert rows(env.vault.db_path, "SELECT role, content, status FROM messages ORDER BY id") == [
        ("user", "hi", "complete"),
        ("assistant", "A whole reply.", "complete"),
    ]


async def test_a_cancel_mid_stream_still_marks_the_partial_reply_cancelled(env):
    env.fake.script(Reply(text="one two three four five six", chunk_size=3, chunk_delay_s=0.05))
    loop = make_loop(env)
    turn = loop.run_turn(None, "hi")
    try:
        async for event in turn:
            if isinstance(event, ev.TextDelta):
                break
    finally:
        await turn.aclose()
        await loop.aclose()
        await finalized()
    ((content, status),) = rows(env.vault.db_path, "SELECT content, status FROM messages WHERE role = 'assistant'")
    assert status == "cancelled" and "one two three four five six".startswith(content)


async def test_escape_while_the_app_shows_the_finished_reply_keeps_it(env, monkeypatch):
    """The worker is cancelled (as a stray Escape does) while the view handles AssistantFinished."""
    env.fake.script(Reply(text="The finished answer.", chunk_size=5))
    handle = TurnView.handle

    async def handle_then_escape(self: TurnView, event: ev.Event) -> None:
        await handle(self, event)
        if isinstance(event, ev.AssistantFinished):
            self.app.action_cancel_turn()
            await asyncio.sleep(0)  # the cancellation lands here, inside the turn

    monkeypatch.setattr(TurnView, "handle", handle_then_escape)
    async with running(env, size=(100, 30)) as (app, pilot):
        app.conversation_view.composer.load_text("question")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns and app.conversation_view.chat_log.query(AssistantBubble))
        await pilot.pause(0.2)
        (bubble,) = app.conversation_view.chat_log.query(AssistantBubble)
        assert bubble.text == "The finished answer."
    assert rows(env.vault.db_path, "SELECT role, content, status FROM messages ORDER BY id")[-1] == (
        "assistant",
        "The finished answer.",
        "complete",
    )


async def test_a_reply_that_finishes_while_its_first_frame_is_written_shows_whole(env, monkeypatch):
    """Seen in a 500-turn pty session, 1 turn in ~50: the frame flusher was inside the reply's
    first write (creating the Markdown stream) when AssistantFinished came; finishing stopped a
    stream whose task had not run yet, the CancelledError of that ended the turn, and the reply
    (stored whole) showed as an empty bubble. Finishing waits for the write in progress."""
    writing, go_on = asyncio.Event(), asyncio.Event()
    write = AssistantBubble.write

    async def held_write(self: AssistantBubble, fragment: str) -> None:
        writing.set()
        await go_on.wait()
        await write(self, fragment)

    monkeypatch.setattr(AssistantBubble, "write", held_write)
    async with running(env, size=(100, 30)) as (app, pilot):
        view = TurnView(app.conversation_view, None)
        await view.handle(ev.AssistantStarted(model="m"))
        await view.handle(ev.TextDelta("The whole reply."))
        await writing.wait()  # the flusher is in the first write
        finished = ev.AssistantFinished(message_id=None, text="The whole reply.", model="m", status="complete")
        finishing = asyncio.create_task(view.handle(finished))
        await pilot.pause()
        go_on.set()
        await finishing
        await pilot.pause()
        (bubble,) = app.conversation_view.chat_log.query(AssistantBubble)
        assert bubble._stream is None  # stopped after the write, not before it
        assert bubble.query_one(Markdown).source == "The whole reply."
