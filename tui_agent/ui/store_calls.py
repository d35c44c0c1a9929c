"""A store call made for the screen: run on the store's thread (core/store/worker); when the store
fails (its server away, the disk full) the user reads one line naming it, and the screen stays as
it was (never Textual's crash screen: issue 35)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from tui_agent.core.store import worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.ui.errors import store_unavailable

T = TypeVar("T")
log = logging.getLogger("tui_agent.ui")


async def read_or_say(widget: Any, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T | None:
    """``fn(*args, **kwargs)`` on the store's thread; None (and a notification) if the store failed."""
    try:
        return await worker.run(fn, *args, **kwargs)
    except STORE_FAILURES as exc:
        log.warning("store call %s failed: %s", getattr(fn, "__name__", fn), exc)
        widget.notify(store_unavailable(exc), severity="error")
        return None
