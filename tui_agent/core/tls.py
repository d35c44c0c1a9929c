"""The default TLS context, built once, in a thread of its own.

Building it loads the system's CA bundle: ~45 ms here, most of it inside OpenSSL, which runs
without the GIL. Started as the warm-up begins, it overlaps the ``openai`` import instead of
following it on the way to the first request. It is the context the HTTP client would build itself
(``httpx2.create_ssl_context()``: the same ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` rules), shared by
every client of the run.
"""

from __future__ import annotations

import ssl
import threading

_lock = threading.Lock()
_thread: threading.Thread | None = None
_context: ssl.SSLContext | None = None
_error: BaseException | None = None


def _build() -> None:
    global _context, _error
    try:
        import httpx2

        _context = httpx2.create_ssl_context()
    except BaseException as exc:  # raised again where the client is built, as it would have been
        _error = exc


def prepare() -> None:
    """Start building the context unless that already started."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_build, name="tls-context", daemon=True)
            _thread.start()


def context() -> ssl.SSLContext:
    """The context (built here if :func:`prepare` was never called); its error if it failed."""
    prepare()
    assert _thread is not None
    _thread.join()
    if _error is not None:
        raise _error
    assert _context is not None
    return _context
