"""The store's own thread: async code (the app, the loop, ``ask``) never waits on the database on
its event loop's thread; it awaits :func:`run`, which does the work here.

One thread, so one connection (peewee keeps one a thread): the app's store calls share it, in the
order they were made, and a statement never runs beside another of the same app. A call that is
cancelled while it runs goes on to its end here (a half-made write is not left), its result unread.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

THREAD_NAME = "tui-agent-store"
_lock = threading.Lock()
_executor: list[ThreadPoolExecutor] = []


def executor() -> ThreadPoolExecutor:
    with _lock:
        if not _executor:
            _executor.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME))
        return _executor[0]


IDLE_RELEASE_S = 60.0  # a PostgreSQL connection unused this long is closed (made again on the next call)
_calls = [0]


async def run(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` in the store's thread; its result (or its exception) here."""
    loop = asyncio.get_running_loop()
    _calls[0] += 1
    try:
        return await loop.run_in_executor(executor(), functools.partial(fn, *args, **kwargs))
    finally:
        loop.call_later(IDLE_RELEASE_S, _release_if_idle, _calls[0])


def _release_if_idle(calls: int) -> None:
    """No call since: the store thread's connection to a server goes (a server's connections are
    counted: docs); a SQLite file stays open (nothing to count, and opening it costs more)."""
    if calls == _calls[0] and _executor:
        executor().submit(_release_server_connection)


def _release_server_connection() -> None:
    from tui_agent.core.store import backends
    from tui_agent.core.store.errors import StoreError

    try:
        backends.current().release_idle()
    except StoreError:  # none open
        pass


def release_this_thread() -> None:
    """The calling thread is done with the store (the app's main thread once the store thread
    takes over): its connection, if any, is closed."""
    from tui_agent.core.store.models import Message

    database = Message._meta.database
    if database is not None and not database.is_closed():
        database.close()


def on_store_thread() -> bool:
    return threading.current_thread().name.startswith(THREAD_NAME)


def close_connection(database: Any) -> None:
    """Close the store thread's connection to ``database`` (the app ends, or its store is closed):
    waits for the calls before it."""
    if not _executor:
        return
    try:
        executor().submit(database.close).result(timeout=30)
    except Exception:  # closing what is gone already, or a server that does not answer
        pass
