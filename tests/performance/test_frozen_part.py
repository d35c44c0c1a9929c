"""A finished part of a streaming reply drawn into lines (FrozenPart) looks exactly like its blocks,
and its blocks come back as they were. Also the contract of Textual's private ``Compositor`` that
``frozen_part.draw`` relies on (``reflow`` a widget's subtree, ``render_strips``)."""

from __future__ import annotations

from pilot_helpers import make, send

from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.frozen_part import FrozenPart, draw, freeze
from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

TEXT = (
    "# Heading\n\nA paragraph with **bold**, `code` and a [link](https://example.com).\n\n"
    "- one\n- two\n  - nested\n\n1. first\n2. second\n\n```python\nprint('hi')\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote\n\nThe end.\n"
)


async def test_a_frozen_part_shows_the_same_screen_as_its_blocks_and_thaws_back(env):
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        await send(app, pilot, "hi")
        bubble = AssistantBubble(TEXT)
        await app.conversation_view.chat_log.mount(bubble)
        await pilot.pause()
        app.conversation_view.chat_log.scroll_end(animate=False)
        await pilot.pause(0.2)
        part = bubble.query_one(ReplyMarkdown)
        before = app.export_screenshot()
        lines = draw(part)
        assert len(lines) == part.region.height and lines[0].cell_length == part.region.width
        frozen = await freeze(part)
        assert isinstance(frozen, FrozenPart) and not part.display
        await pilot.pause(0.2)
        assert app.export_screenshot() == before
        frozen.thaw()
        await pilot.pause(0.2)
        assert part.display and not bubble.query(FrozenPart)
        assert app.export_screenshot() == before


async def test_a_frozen_part_thaws_when_the_width_changes(env):
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        await send(app, pilot, "hi")
        bubble = AssistantBubble(TEXT)
        await app.conversation_view.chat_log.mount(bubble)
        await pilot.pause(0.2)
        part = bubble.query_one(ReplyMarkdown)
        assert await freeze(part) is not None
        await pilot.pause()
        await pilot.resize_terminal(80, 50)
        await pilot.pause(0.3)
        assert part.display and not bubble.query(FrozenPart)
