"""Imports the ``openai`` client in ONE background thread, started as early as wanted.

Two threads importing one package at once can see it half initialised, so every caller goes
through :func:`start` (idempotent) and :func:`wait`; nothing else imports openai before ``wait``
returns.
"""

from __future__ import annotations

import gc
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
    timings["started_at"] = time.time()
    # Importing builds tens of thousands of long-lived objects (pydantic models): collecting cycles
    # among them while they are built is wasted work on the path of the first turn.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from tui_agent.core.openai_import import load

        openai = load()  # without the API's thousand unused type modules (see openai_import)
        # Everything the first turn would otherwise import on the event loop, between Enter and the
        # request leaving: the chat resource (lazy in openai), the async transport's anyio backend,
        # the JSON parser, the turn loop, and the reply bubble's Markdown parser
        # (markdown-it, linkify).
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1/v1", api_key="preload", max_retries=0)
        client.chat.completions.with_streaming_response  # noqa: B018
        import anyio._backends._asyncio
        import anyio._core._sockets
        import anyio.streams.stapled  # noqa: F401
        import jiter  # noqa: F401
        import textual.widgets._markdown  # noqa: F401

        import tui_agent.core.loop  # noqa: F401 - the tools come with the registry (app.preload_client)
        from tui_agent.ui.markdown_text import parser

        parser().parse("warm *up* `x` https://example.org\n\n- a\n")
    except Exception:  # the turn will import it again and report the error where the user sees it
        log.exception("preloading the openai client failed")
    finally:
        timings["import_s"] = time.perf_counter() - started
        if collecting:
            gc.enable()
        _done.set()
    try:  # after the turn's needs: images come later than the first words of a reply
        from tui_agent.ui.images import load_textual_image

        load_textual_image()
    except Exception:
        log.exception("preloading textual-image failed")


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
