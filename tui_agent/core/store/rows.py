"""Writing a row whatever the store: ``upsert`` asks the store the model is bound to."""

from __future__ import annotations

from typing import Any

import peewee as pw


def upsert(model: type[pw.Model], **values: Any) -> None:
    """Insert the row, or replace the values of the row with the same primary key."""
    from tui_agent.core.store import backends

    backends.of(model._meta.database).upsert(model, **values)
