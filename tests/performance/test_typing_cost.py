"""A key typed while a long reply is on screen (or streaming) costs the same as with an empty log:
what runs on each key asks about the composer's own neighbours, never walks the whole screen. The
slash hints were looked up with a query over every widget under the conversation: 8,000 tokens of
Markdown are a few thousand widgets, walked at every key."""

from __future__ import annotations

import pytest
from fake_openai import markdown_tokens
from pilot_helpers import make, send
from textual.css import query as query_module

from tui_agent.ui.widgets.bubbles import AssistantBubble

pytestmark = pytest.mark.slow


async def _nodes_matched_per_key(env, monkeypatch, reply_tokens: int) -> float:
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "hi")
        if reply_tokens:
            bubble = AssistantBubble("".join(markdown_tokens(reply_tokens)))
            await app.conversation_view.chat_log.mount(bubble)
        await pilot.pause(0.2)
        matched = 0
        real_match = query_module.match

        def counting(selector_sets, node):
            nonlocal matched
            matched += 1
            return real_match(selector_sets, node)

        monkeypatch.setattr(query_module, "match", counting)
        app.conversation_view.composer.focus()
        for key in "typing":
            await pilot.press(key)
        await pilot.pause()
        monkeypatch.setattr(query_module, "match", real_match)
        assert app.conversation_view.composer.text.endswith("typing")
        return matched / len("typing")


async def test_a_key_walks_no_more_widgets_with_a_long_reply_on_screen(env, monkeypatch):
    empty = await _nodes_matched_per_key(env, monkeypatch, 0)
    long = await _nodes_matched_per_key(env, monkeypatch, 3_000)
    assert long <= empty + 5, (empty, long)
