"""History search in the command palette: off the event loop, each keystroke cancelling the search
before it, a page of hits (newest first, title and date beside each) and "older hits" to page on."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from tui_agent.core.store import search as store_search
from tui_agent.core.store.models import Message
from tui_agent.core.textsafe import visible

if TYPE_CHECKING:
    from tui_agent.ui.host import SearchHost

MIN_CHARS = 2


class Searcher:
    """One thread with its own read-only connection to the vault's database. A search that is
    cancelled (the palette cancels it at the next keystroke) stops at its next read: the flag is
    checked between the index's windows and by SQLite's progress handler."""

    def __init__(self, path: str | None = None) -> None:
        # The database the models are bound to (the app's vault).
        self.path = path or str(Message._meta.database.database)
        self._closing = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-search")
        self._conn: sqlite3.Connection | None = None

    async def page(self, query: str, before: int | None = None) -> store_search.Page:
        cancel = threading.Event()
        future = asyncio.wrap_future(self._pool.submit(self._run, query, before, cancel))
        try:
            return await future
        except asyncio.CancelledError:
            cancel.set()  # not Connection.interrupt(): it could land on the search that follows
            raise

    def _run(self, query: str, before: int | None, cancel: threading.Event) -> store_search.Page:
        if cancel.is_set() or self._closing.is_set():  # superseded while it waited for the thread
            raise store_search.SearchCancelled
        conn = self._connection()
        stop = lambda: cancel.is_set() or self._closing.is_set()  # noqa: E731
        conn.set_progress_handler(lambda: 1 if stop() else 0, 1000)
        try:
            return store_search.search_page(conn, query, before=before, cancelled=stop)
        finally:
            conn.set_progress_handler(None, 0)

    def close(self) -> None:
        """Stop the search running (if any) and close the connection, on its own thread."""
        self._closing.set()
        self._pool.submit(self._close)
        self._pool.shutdown(wait=False)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            self._conn.execute("PRAGMA query_only = 1")
        return self._conn


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
