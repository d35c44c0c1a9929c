"""History search in the app's palette (issue 30): typing never waits for a search, each keystroke
cancels the search before it, a page of hits newest first with title and date, older hits after."""

from __future__ import annotations

import threading

import pytest
from backends import BOTH_BACKENDS
from history_filler import fill_store
from pilot_helpers import running, until
from store_rows import rows
from textual.command import CommandInput, CommandList, CommandPalette

from tui_agent.core.store import search as store_search
from tui_agent.core.store import search_pg

pytestmark = BOTH_BACKENDS


def prompts(palette: CommandPalette) -> list[str]:
    options = palette.query_one(CommandList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


@pytest.mark.slow
async def test_typing_cancels_the_search_before_and_never_waits_for_it(env, monkeypatch, store_backend):
    """The search for "lo" is held in its thread until it is told to stop; meanwhile the rest of
    the word is typed (the input takes each key at once), the held search sees it is cancelled,
    and the hits shown are the last query's."""
    fill_store(2_000)
    module = search_pg if store_backend == "postgresql" else store_search
    real = module.search_page
    held = threading.Event()
    told_to_stop = threading.Event()
    queries: list[str] = []

    def search_page(conn, query, **kwargs):
        queries.append(query)
        if query == "lo":
            held.set()
            cancelled = kwargs["cancelled"]
            for _ in range(1000):  # up to 10 s: until the palette cancels this search
                if cancelled():
                    told_to_stop.set()
                    raise store_search.SearchCancelled
                threading.Event().wait(0.01)
        return real(conn, query, **kwargs)

    monkeypatch.setattr(module, "search_page", search_page)
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        palette = app.screen
        await pilot.press("l", "o")
        await until(pilot, held.is_set)
        await pilot.press("r", "e", "m")  # while the search for "lo" still runs in its thread
        assert palette.query_one(CommandInput).value == "lorem"
        await until(pilot, told_to_stop.is_set)
        await until(pilot, lambda: any("[lorem]" in p for p in prompts(palette)))
        assert queries[0] == "lo" and queries[-1] == "lorem"
        assert not any("[lo]" in p for p in prompts(palette))


async def test_palette_shows_newest_hits_with_title_and_date_and_pages_on(env):
    fill_store(2_000)
    newest = [r["id"] for r in rows("SELECT id FROM messages ORDER BY id DESC LIMIT 100")]
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        palette = app.screen
        await pilot.press(*"lorem")
        await until(pilot, lambda: len(prompts(palette)) > store_search.PAGE)
        shown = prompts(palette)
        # Each hit: role and snippet, then the conversation's title, the date and the message id.
        first = shown[0]
        assert first.startswith("assistant: message 1999: **[lorem]**"), first
        assert "topic 8 · 2023-01-02 09:19 · message 2000" in first
        ids = [int(p.rsplit("message ", 1)[1]) for p in shown[: store_search.PAGE]]
        assert ids == newest[: store_search.PAGE]
        older = shown[store_search.PAGE]
        assert older.startswith("Older hits for 'lorem'…"), older
        options = palette.query_one(CommandList)
        options.highlighted = store_search.PAGE
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen is not palette)
        second = app.screen
        await until(pilot, lambda: len(prompts(second)) > store_search.PAGE)
        ids = [int(p.rsplit("message ", 1)[1]) for p in prompts(second)[: store_search.PAGE]]
        assert ids == newest[store_search.PAGE : 2 * store_search.PAGE]
        options = second.query_one(CommandList)
        options.highlighted = 0
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, CommandPalette))
        await until(pilot, lambda: app.conversation_id == 8)
        found = app.conversation_view.chat_log.query(".-found")
        assert found.first().message_id == newest[store_search.PAGE]
