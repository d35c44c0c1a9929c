"""Loading the page above keeps what the user looks at in place, however late the page's layout
settles: a loaded machine lays it out a refresh later, and a reply's Markdown is parsed on a thread
(its blocks come after the page is mounted)."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from pilot_helpers import running, until
from test_perf_ui import _long_conversation
from textual.widgets import Static

from tui_agent.ui.widgets import chat_log as chat_log_module
from tui_agent.ui.widgets.chat_log import PAGE

pytestmark = pytest.mark.slow


async def _scroll_up_a_little(app, pilot):
    """Scroll up to within a screen of the top of what is mounted (the page above loads), not to
    the top row; returns the widget at the top of the view and where it is on the screen."""
    log = app.conversation_view.chat_log
    assert log.has_older and log.max_scroll_y > 2
    top = min(log.scroll_y - 2, log.size.height // 2)
    watched = next(c for c in log.children if c.virtual_region.bottom > top)
    on_screen = watched.virtual_region.y - top
    log.scroll_to(y=top, animate=False, immediate=True)  # a little up, far from the top row
    return watched, on_screen


@asynccontextmanager
async def _long_conversation_open(env, monkeypatch):
    """The app with a conversation of six pages open at its end, where only a scroll loads the page
    above: ``(app, pilot, chat log)``."""
    monkeypatch.setattr(chat_log_module, "PREFETCH_AFTER_S", 3600)
    conversation = _long_conversation(6 * PAGE)
    async with running(env) as (app, pilot):
        await app.conversation_view.open_conversation(conversation)
        log = app.conversation_view.chat_log
        # Settled (its first layout's after-refresh callback ran): a scroll before that is the log's
        # own and loads nothing. And laid out taller than the view (the replies' blocks are parsed
        # on a thread and come later). One pause was not always enough on a loaded machine (loaded
        # runs 190 and 195).
        await until(pilot, lambda: not log._settling and log.max_scroll_y > 2, what="the conversation never settled")
        yield app, pilot, log


async def test_the_page_above_loads_before_the_top_and_the_view_does_not_jump(env, monkeypatch):
    async with _long_conversation_open(env, monkeypatch) as (app, pilot, log):
        before = len(log.children)
        watched, on_screen = await _scroll_up_a_little(app, pilot)
        await until(pilot, lambda: len(log.children) > before, what="the page above never loaded")
        await app.workers.wait_for_complete()
        await log.loads_done()
        assert len(log.children) == before + PAGE  # loaded without reaching the top
        # What the user looked at stays put once the page is laid out (on a loaded machine that
        # layout comes a refresh or more later).
        await until(pilot, lambda: watched.virtual_region.y - log.scroll_y == on_screen, what="the view back in place")
        assert not log.following


async def test_the_view_stays_put_when_the_page_above_is_laid_out_late(env, monkeypatch):
    """While another widget holds the screen's updates (a streaming reply moves its sealed blocks in
    one batch) the page above is mounted but not laid out: the view is put back once it is, and
    the user's own scroll after that is never undone."""
    async with _long_conversation_open(env, monkeypatch) as (app, pilot, log):
        before = len(log.children)
        with app.batch_update():
            watched, on_screen = await _scroll_up_a_little(app, pilot)
            await until(pilot, lambda: len(log.children) > before, what="the page above never loaded")
            await app.workers.wait_for_complete()
            await log.loads_done()
            assert len(log.children) == before + PAGE
            await pilot.pause(0.1)  # refreshes come and go, with no layout
        await pilot.pause()
        await app.workers.wait_for_complete()
        await log.loads_done()
        assert len(log.children) == before + PAGE  # the view never went up to the top: no more pages
        await until(pilot, lambda: watched.virtual_region.y - log.scroll_y == on_screen, what="the view back in place")
        # The user scrolls on: the view is theirs again (a later layout does not put it back).
        log.scroll_to(y=log.scroll_y - 3, animate=False, immediate=True)
        await pilot.pause()
        moved = log.scroll_y
        await log.mount(Static("two\nlines"), before=log.children[0])  # a layout of another size
        await pilot.pause()
        assert log.scroll_y == moved  # not moved to keep the watched widget in place
