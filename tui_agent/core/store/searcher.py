"""Searching the history off the event loop: one thread with its own read-only connection to the
store (the app's main connection is not held by a search), each search cancellable while it runs:
SQLite's progress handler, or a cancel request sent to the PostgreSQL server for its statement.
The command palette's history search (ui/history_search.py) uses it."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tui_agent.core.store import portable
from tui_agent.core.store import search as store_search
from tui_agent.core.store.errors import describe
from tui_agent.core.store.location import StoreURL
from tui_agent.core.store.models import Message


class Searcher:
    """One thread with its own read-only connection to the vault's store. A search that is
    cancelled (the palette cancels it at the next keystroke) stops at its next read: the flag is
    checked between the index's windows, and by SQLite's progress handler or, on PostgreSQL, by a
    cancel request sent to the server for the statement running."""

    def __init__(self, path: str | None = None, url: StoreURL | None = None) -> None:
        # The store the models are bound to (the app's vault) unless told otherwise.
        db = Message._meta.database
        if path is None and url is None and portable.is_postgresql(db):
            url = db.store_url
        self.url = url if url is not None and url.is_postgresql else None
        self.path = path or ("" if self.url else str(db.database))
        self._closing = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-search")
        self._conn: Any = None
        self._lock = threading.Lock()
        self._running: threading.Event | None = None  # the cancel flag of the search running (PostgreSQL)

    async def page(self, query: str, before: int | None = None) -> store_search.Page:
        cancel = threading.Event()
        future = asyncio.wrap_future(self._pool.submit(self._run, query, before, cancel))
        try:
            return await future
        except asyncio.CancelledError:
            cancel.set()  # not Connection.interrupt(): it could land on the search that follows
            if self.url is not None:
                threading.Thread(target=self._cancel_server, args=(cancel,), daemon=True).start()
            raise

    def _run(self, query: str, before: int | None, cancel: threading.Event) -> store_search.Page:
        if cancel.is_set() or self._closing.is_set():  # superseded while it waited for the thread
            raise store_search.SearchCancelled
        stop = lambda: cancel.is_set() or self._closing.is_set()  # noqa: E731
        if self.url is not None:
            return self._run_postgresql(query, before, cancel, stop)
        conn = self._connection()
        conn.set_progress_handler(lambda: 1 if stop() else 0, 1000)
        try:
            return store_search.search_page(conn, query, before=before, cancelled=stop)
        finally:
            conn.set_progress_handler(None, 0)

    def _run_postgresql(
        self, query: str, before: int | None, cancel: threading.Event, stop: Callable[[], bool]
    ) -> store_search.Page:
        import psycopg

        from tui_agent.core.store import search_pg

        assert self.url is not None
        with self._lock:
            self._running = cancel
        try:
            conn = self._connection()
            try:
                return search_pg.search_page(conn, query, before=before, cancelled=stop)
            except store_search.SearchCancelled:
                if stop():
                    raise
            # Cancelled by a request meant for the search before (it arrived late): search again.
            return search_pg.search_page(conn, query, before=before, cancelled=stop)
        except psycopg.Error as exc:  # the server went away (the next search connects again)...
            self._close()
            raise describe(exc, self.url.where()) from None
        finally:
            with self._lock:
                self._running = None

    def _cancel_server(self, cancel: threading.Event) -> None:
        """Ask the server to cancel the statement running, if it is still this search's: the lock
        keeps the next search from starting while the request is sent."""
        with self._lock:
            if self._running is cancel and self._conn is not None:
                with contextlib.suppress(Exception):  # the search ends anyway, at its next window
                    self._conn.cancel_safe(timeout=2)

    def close(self) -> None:
        """Stop the search running (if any) and close the connection, on its own thread."""
        self._closing.set()
        running = self._running
        if running is not None:
            threading.Thread(target=self._cancel_server, args=(running,), daemon=True).start()
        self._pool.submit(self._close)
        self._pool.shutdown(wait=False)

    def _close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> Any:
        if self._conn is None:
            if self.url is not None:
                from tui_agent.core.store import search_pg

                self._conn = search_pg.connect(self.url)
            else:
                conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
                conn.execute("PRAGMA query_only = 1")
                self._conn = conn
        return self._conn
