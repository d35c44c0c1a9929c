"""History search in the command palette: off the event loop, each keystroke cancelling the search
before it, a page of hits (newest first, title and date beside each) and "older hits" to page on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from tui_agent.core.store import search as store_search
from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.searcher import Searcher
from tui_agent.core.textsafe import visible

if TYPE_CHECKING:
    from tui_agent.ui.host import SearchHost

MIN_CHARS = 2


class HistorySearch(Provider):
    """Type words; each hit jumps to that message in its conversation. Each palette has its own
    searcher (a thread and a connection), closed with the palette."""

    _searcher: Searcher | None = None

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher()
        return self._searcher

    async def shutdown(self) -> None:
        if self._searcher is not None:
            self._searcher.close()

    async def search(self, query: str) -> Hits:
        text = query.strip()
        if len(text) < MIN_CHARS:
            return
        async for score, display, command, help_text in self._page(text, None):
            yield Hit(score, display, command, help=help_text)

    async def _page(
        self, text: str, before: int | None
    ) -> AsyncIterator[tuple[float, Content, Callable[[], Any], str]]:
        app = cast("SearchHost", self.app)
        try:
            page = await self.searcher.page(text, before)
        except store_search.QueryError as exc:
            yield 0.01, Content(f"History search: {exc}"), _nothing, ""
            return
        except store_search.SearchCancelled:
            return
        except StoreError as exc:
            yield 0.01, Content(f"History search: {exc}"), _nothing, ""
            return
        score = 0.5
        for hit in page.hits:
            score -= 0.0001  # the palette sorts by score: this keeps the page's order
            title = visible(hit.title) or f"conversation {hit.conversation_id}"
            yield (
                score,
                Content(f"{visible(hit.role)}: {visible(' '.join(hit.snippet.split()))}"),  # not markup
                partial(app.jump_to_message, hit.conversation_id, hit.message_id),
                escape(f"{title} · {visible(hit.created_at[:16])} · message {hit.message_id}"),  # markup
            )
        if page.before is not None:
            looked = "" if page.complete else f" (looked back to message {page.searched_to})"
            yield (
                score - 0.0001,
                Content(f"Older hits for {visible(text)!r}…"),
                partial(open_older, self.app, text, page.before),
                escape(f"the next {store_search.PAGE} before message {page.before}{looked}"),
            )


def _nothing() -> None:
    """A hit that only says something (why the query finds nothing)."""


def open_older(app: Any, text: str, before: int) -> None:
    """A palette of the next page of hits for ``text`` (typing in it starts a new search)."""
    provider = type("OlderHits", (OlderHits,), {"query_text": text, "before": before})
    app.push_screen(CommandPalette(providers=[provider], placeholder=f"Older hits for {visible(text)!r}…"))


class OlderHits(HistorySearch):
    query_text = ""
    before = 0

    async def discover(self) -> Hits:
        async for _, display, command, help_text in self._page(self.query_text, self.before):
            yield DiscoveryHit(display, command, help=help_text)
