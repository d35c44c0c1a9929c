"""Imports the ``openai`` client in ONE background thread, started as early as wanted.

Two threads importing one package at once can see it half initialised, so every caller goes
through :func:`start` (idempotent) and :func:`wait_for_request`; nothing else imports openai before
it returns. What shows the reply (Markdown) is imported after that, while the request can leave;
when a message was sent before the warm-up was over, only after its reply's first words are on
screen (drawn without Markdown meanwhile, see AssistantBubble). The TLS context is built beside the
imports, in a thread of its own (core/tls).
"""

from __future__ import annotations

import logging
import threading
import time

from tui_agent.ui import gc_tuning

log = logging.getLogger("tui_agent.ui")

CLIENT_WAIT_S = 2.0
_lock = threading.Lock()
_thread: threading.Thread | None = None
_request_ready = threading.Event()  # what the first request needs is imported
_client_built = threading.Event()  # the caller built its client and tools: Markdown may come next
_hold_for_client = False
_done = threading.Event()  # and what shows the reply
_turn_waiting = threading.Event()  # a message was sent before the warm-up was over
_first_words = threading.Event()  # ...and its reply's first words are on screen (or it ended)
FIRST_WORDS_WAIT_S = 2.0
timings: dict[str, float] = {}


def _import() -> None:
    started = time.perf_counter()
    timings["started_at"] = time.time()
    try:
        import httpx2  # noqa: F401 - first: the TLS context is built from it, beside the rest

        from tui_agent.core import tls
        from tui_agent.core.openai_import import load

        tls.prepare()
        load()  # without the API's thousand unused type modules (see openai_import)
        # Everything the first request would otherwise import on the event loop, between Enter and
        # the request leaving: the HTTP transport (built with the client, app.preload_client), the
        # async backend, the JSON parser, the turn loop, the tools. (The request is posted through
        # the client itself, not its lazily imported chat resource: see core/llm.)
        import anyio
        import anyio.streams.stapled

        # anyio imports its public names on first use (the socket layer with connect_tcp) and its
        # asyncio backend on its first run: both through public API, the run on a throwaway loop.
        anyio.connect_tcp  # noqa: B018
        anyio.run(anyio.sleep, 0)
        import httpcore2  # noqa: F401
        import jiter  # noqa: F401

        import tui_agent.core.loop
        import tui_agent.core.tools.registry  # noqa: F401
    except Exception:  # the turn will import it again and report the error where the user sees it
        log.exception("preloading the openai client failed")
    finally:
        timings["request_s"] = time.perf_counter() - started
        _request_ready.set()
    if _hold_for_client:  # one thing at a time: two threads importing share one core (the GIL)
        _client_built.wait(CLIENT_WAIT_S)
        if _turn_waiting.is_set():
            # A message is on its way: the request, then its first words (drawn without Markdown
            # while it is not imported, see AssistantBubble), get the core to themselves.
            _first_words.wait(FIRST_WORDS_WAIT_S)
    try:
        # Then what shows the reply (the request can leave meanwhile): Textual's Markdown and the
        # reply bubble's parser (markdown-it, linkify).
        import textual.widgets.markdown  # noqa: F401

        from tui_agent.ui.markdown_text import parser

        parser().parse("warm *up* `x` https://example.org\n\n- a\n")
    except Exception:
        log.exception("preloading Markdown failed")
    finally:
        timings["import_s"] = time.perf_counter() - started
        gc_tuning.resume(gc_tuning.WARM_UP)
        _done.set()
    try:  # after the turn's needs: images come later than the first words of a reply
        from tui_agent.ui.images import load_textual_image

        load_textual_image()
    except Exception:
        log.exception("preloading textual-image failed")


def start(*, hold_for_client: bool = False) -> None:
    """Start the import thread unless it already runs (or ran). ``hold_for_client``: after what the
    request needs, wait (up to CLIENT_WAIT_S) until the caller says :func:`client_built`."""
    global _thread, _hold_for_client
    with _lock:
        if _thread is None:
            _hold_for_client = hold_for_client
            # Importing builds tens of thousands of long-lived objects (pydantic models): collecting
            # cycles among them while they are built is wasted work on the path of the first turn.
            # Paused here, not in the thread: the caller's own pause may end as soon as this returns.
            gc_tuning.pause(gc_tuning.WARM_UP)
            _thread = threading.Thread(target=_import, name="openai-import", daemon=True)
            _thread.start()


def client_built() -> None:
    _client_built.set()


def turn_started() -> None:
    """A message was sent: if the warm-up is not over, Markdown waits for its first words."""
    if not _done.is_set():
        _turn_waiting.set()


def first_words_shown() -> None:
    """The reply's first words are on screen, or the turn ended without any."""
    _first_words.set()


def done() -> bool:
    return _done.is_set()


def markdown_ready() -> bool:
    """Markdown can be imported without waiting for this thread (it did, or it never started)."""
    return _done.is_set() or _thread is None


def wait_for_request(timeout: float | None = None) -> bool:
    """Block until what the first request needs is imported (start the thread if nobody did)."""
    start()
    return _request_ready.wait(timeout)


def wait(timeout: float | None = None) -> bool:
    """Block until the import finished (start it if nobody did)."""
    start()
    return _done.wait(timeout)
