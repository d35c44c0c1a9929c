"""A running app stops writing once another machine upgraded the shared store's schema past what
this tui-agent knows (issue 34 item 6): its writes, made for the old tables, could corrupt the new.

The migration that upgrades announces it (``pg_migrations.migrate``: a ``schema`` notification);
the listener (``pg_listen``) does not believe the announcement (any role can NOTIFY): it reads the
version from the database itself, and only a version newer than this code's marks the store. From
then on the PostgreSQL database refuses every write with one line (``pg.ReconnectingDatabase``);
reads go on, so what is on the screen stays usable.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_newer: list[int] = []  # the newer schema version seen, once seen


def mark_newer(version: int) -> None:
    with _lock:
        if not _newer or version > _newer[0]:
            _newer[:] = [version]


def refusal() -> str | None:
    """The one line a write gets once the schema is newer than this code's, else None."""
    with _lock:
        if not _newer:
            return None
        version = _newer[0]
    return (
        f"the shared store was upgraded to schema version {version} by a newer tui-agent on another "
        "machine: this one writes nothing more to it; update tui-agent here, then start it again"
    )


def forget() -> None:
    """For tests: as at start."""
    with _lock:
        _newer.clear()
