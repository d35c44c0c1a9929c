"""Searching the history off the event loop: one thread with its own read-only connection to the
store (the app's main connection is not held by a search), each search cancellable while it runs:
SQLite's progress handler, or a cancel request sent to the PostgreSQL server for its statement.
The command palette's history search (ui/history_search.py) uses it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tui_agent.core.store import backends
from tui_agent.core.store import search as store_search


class Searcher:
    """One thread with a connection of its own to the vault's store (the store's ``search_reader``).
    A search that is cancelled (the palette cancels it at the next keystroke) stops at its next
    read: the flag is checked between the index's windows, and by the store's way of stopping a
    statement (SQLite's progress handler, a cancel request sent to a server)."""

    def __init__(self, store: backends.Store | None = None) -> None:
        # The store the models are bound to (the app's vault) unless told otherwise.
        self.reader = (store or backends.current()).search_reader()
        self._closing = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-search")
        self._running: Callable[[], bool] | None = None  # the stop flag of the search running
        self._latest: threading.Event | None = None  # the cancel flag of the newest search asked for

    async def page(self, query: str, before: int | None = None) -> store_search.Page:
        """A page of hits for ``query``. A newer call supersedes it: it stops as if cancelled
        (the palette's next key starts one), whether or not its own task's cancel arrives: the
        palette's cancel can be lost (Textual's gather waits with ``asyncio.wait_for``, which on
        Python 3.11 drops a cancel that comes as another provider's hit does)."""
        cancel = threading.Event()
        stop = lambda: cancel.is_set() or self._closing.is_set()  # noqa: E731
        previous, self._latest = self._latest, cancel
        if previous is not None and not previous.is_set():
            previous.set()
            running = self._running
            if running is not None:  # the one before, running on the thread: its statement stops too
                threading.Thread(target=self.reader.cancel, args=(running,), daemon=True).start()
        future = asyncio.wrap_future(self._pool.submit(self._run, query, before, stop))
        try:
            return await future
        except asyncio.CancelledError:
            cancel.set()
            threading.Thread(target=self.reader.cancel, args=(stop,), daemon=True).start()
            raise

    def _run(self, query: str, before: int | None, stop: Callable[[], bool]) -> store_search.Page:
        if stop():  # superseded while it waited for the thread
            raise store_search.SearchCancelled
        self._running = stop
        try:
            return self.reader.page(query, before, stop)
        finally:
            self._running = None

    def close(self) -> None:
        """Stop the search running (if any) and close the connection, on its own thread."""
        self._closing.set()
        running = self._running
        if running is not None:
            threading.Thread(target=self.reader.cancel, args=(running,), daemon=True).start()
        self._pool.submit(self.reader.close)
        self._pool.shutdown(wait=False)
