"""The rows a request is built from, read as light tuples (peewee model instances cost ~10x more:
a 400-message window took ~30 ms to materialise, more than everything else in the build)."""

from __future__ import annotations

from typing import Any

from tui_agent.core.store import branches


def recent_rows(conversation_id: int, limit: int, before_id: int | None = None) -> list[Any]:
    """The newest ``limit`` messages of the active branch (older than ``before_id``), oldest first,
    with the columns' names."""
    return branches.path_messages(conversation_id, limit=limit, before_id=before_id, light=True)
