"""Work-arounds for Textual bugs: memory held by widgets the chat log has let go of is freed
(Textual #6665); a widget whose content changes twice around a layout gets its new height."""

from __future__ import annotations

import gc
import weakref

from test_app import make
from textual.app import App, ComposeResult
from textual.color import Color
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Markdown, Static

from tui_agent.core.store import history
from tui_agent.ui import textual_fixes
from tui_agent.ui.reply_preview import ReplyPreview


def _conversation(count: int) -> int:
    """Replies of both kinds: plain paragraphs (one ReplyPreview) and Markdown (a widget per block)."""
    conversation = history.new_conversation("many").id
    for i in range(count):
        text = f"message {i} **bold** text" if i % 4 != 3 else f"message {i}\n\n- a list\n- of two"
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", text)
    return conversation


async def test_render_caches_of_removed_bubbles_are_freed(env):
    conversation = _conversation(30)
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        await app.open_conversation(conversation)
        await pilot.pause()
        rendered = [w for w in app.chat_log.query("*") if w.region.height > 0]
        assert len(rendered) > 10
        assert any(isinstance(w, Markdown) for w in rendered) and any(isinstance(w, ReplyPreview) for w in rendered)
        caches = [weakref.ref(w._styles_cache) for w in rendered if w._styles_cache._cache]
        assert len(caches) > 10  # they drew lines: their caches hold them
        del rendered
        await app.open_conversation(None)  # the log lets every bubble go
        await pilot.pause()
        gc.collect()
        alive = [c for c in caches if c() is not None]
        assert alive == [], f"{len(alive)} of {len(caches)} render caches of removed widgets still held"


def test_the_work_around_keeps_the_colours():
    from textual._styles_cache import StylesCache

    textual_fixes.apply()
    textual_fixes.apply()  # idempotent
    inner, outer = StylesCache.get_inner_outer(Color(10, 20, 30), Color(255, 0, 0, 0.5))
    assert inner.background == Color(10, 20, 30) + Color(255, 0, 0, 0.5)
    assert outer.background == Color(10, 20, 30)


class _Reply(App[None]):
    CSS = "#bubble { height: auto; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(), Vertical(id="bubble"):
            yield Static("first words", id="reply")


async def test_a_reply_updated_again_before_its_layout_ran_gets_its_new_height():
    """The end of a streamed reply stayed off screen in long sessions: its paragraph kept the height
    of its first words. The sequence, forced here in its real order: the paragraph gets more text
    (it asks for a layout), the screen lays out before the paragraph's turn comes (another widget,
    the bubble, asked too), then the rest of the reply arrives before the paragraph's turn."""
    textual_fixes.apply()
    app = _Reply()
    async with app.run_test(size=(40, 20)) as pilot:
        reply = app.query_one("#reply", Static)
        await pilot.pause()
        reply.update("first words and more")
        for ancestor in (app.query_one("#bubble"), app.query_one(VerticalScroll)):
            ancestor._clear_arrangement_cache()
            ancestor._layout_updates += 1  # what the bubble's own layout request does
        app.screen._refresh_layout()
        assert reply.size.height == 1
        reply.update("word " * 60)  # 300 characters: 8 lines of 40
        await pilot.pause()
        await pilot.pause()
        assert reply.size.height == 8
        assert app.query_one("#bubble").size.height == 8
