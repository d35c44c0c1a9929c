"""Imports the ``openai`` client in ONE background thread, started as early as wanted.

Two threads importing one package at once can see it half initialised, so every caller goes
through :func:`start` (idempotent) and :func:`wait`; nothing else imports openai before ``wait``
returns.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("tui_agent.ui")

_lock = threading.Lock()
_thread: threading.Thread | None = None
_done = threading.Event()
timings: dict[str, float] = {}


def _import() -> None:
    started = time.perf_counter()
    try:
        import httpx  # noqa: F401
        import openai

        # The client imports more on construction (httpx URL handling): do it here too, so that no
        # import is left for the event loop to race with.
        openai.AsyncOpenAI(base_url="http://127.0.0.1/v1", api_key="preload", max_retries=0)
    except Exception:  # the turn will import it again and report the error where the user sees it
        log.exception("preloading the openai client failed")
    finally:
        timings["import_s"] = time.perf_counter() - started
        _done.set()


def start() -> None:
    """Start the import thread unless it already runs (or ran)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_import, name="openai-import", daemon=True)
            _thread.start()


def done() -> bool:
    return _done.is_set()


def wait(timeout: float | None = None) -> bool:
    """Block until the import finished (start it if nobody did)."""
    start()
    return _done.wait(timeout)
