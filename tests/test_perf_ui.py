"""Behaviour behind the performance work: the send path does not wait for imports, the chat log
releases widgets far above the view and brings them back, very long replies stay cheap."""

from __future__ import annotations

import threading

from fake_openai import Reply
from test_app import children, make, send, settle

from tui_agent.core.store import history
from tui_agent.ui import warmup
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble


async def test_user_bubble_shows_before_the_openai_import_finishes(env, monkeypatch):
    release = threading.Event()
    real_import = warmup._import

    def slow_import() -> None:
        release.wait(30)
        real_import()

    monkeypatch.setattr(warmup, "_thread", None)
    monkeypatch.setattr(warmup, "_done", threading.Event())
    monkeypatch.setattr(warmup, "_import", slow_import)
    env.fake.script(Reply(text="pong"))
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "ping", wait=False)
        await pilot.pause(0.2)
        assert not warmup.done()
        (bubble,) = children(app, UserBubble)
        assert bubble.text == "ping" and bubble.message_id is None
        assert env.fake.chat_requests == []  # the request waits for the import, the bubble does not
        release.set()
        await settle(app, pilot)
        (bubble,) = children(app, UserBubble)  # adopted, not mounted twice
        assert bubble.message_id is not None
        assert history.recent_messages(bubble_conversation(app), 1)[0].role == "assistant"
        assert [b.text for b in children(app, AssistantBubble)] == ["pong"]


def bubble_conversation(app) -> int:
    assert app.conversation_id is not None
    return app.conversation_id
