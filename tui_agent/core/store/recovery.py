"""Finishing a row when the store itself fails (disk full mid-stream): it must not stay ``streaming``.

A small reserve file next to the database (``agent.db-reserve``) holds disk space for exactly this:
when the disk is full, it is deleted so that the one small update marking the row can still be
written. It is made again the next time the vault is opened with space to spare.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from tui_agent.core.store.errors import DATABASE_ERRORS, bound_path, is_disk_full
from tui_agent.core.store.models import Message

log = logging.getLogger("tui_agent.store")
RESERVE_BYTES = 512 * 1024


def reserve_path(db_path: Path | str) -> Path:
    return Path(f"{db_path}-reserve")


def make_reserve(db_path: Path | str) -> None:
    """Create the reserve if it is missing (quietly skipped when there is no room for it)."""
    path = reserve_path(db_path)
    if path.exists():
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(b"\0" * RESERVE_BYTES)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("no room for the disk-space reserve %s: %s", path, exc)
        tmp.unlink(missing_ok=True)


def release_reserve(db_path: Path | str) -> bool:
    try:
        reserve_path(db_path).unlink()
        return True
    except FileNotFoundError:
        return False


def finish_row(message_id: int, status: str) -> bool:
    """Set the row's status (its content stays as last saved); True if that was written.

    On a full disk the reserve is given up for it, once.
    """
    for attempt in (1, 2):
        try:
            Message.update(status=status).where(Message.id == message_id).execute()
            return True
        except DATABASE_ERRORS as exc:
            if attempt == 1 and is_disk_full(exc) and release_reserve(bound_path()):
                log.warning("disk full: released the space reserve to mark message %s as %s", message_id, status)
                continue
            log.error("could not mark message %s as %s: %s", message_id, status, exc)
            _PENDING[message_id] = status  # the server is away: done when it is back (finish_pending)
            return False
    return False


_PENDING: dict[int, str] = {}  # rows the store could not mark (the server was away): id -> status


def finish_pending() -> int:
    """Mark the rows that could not be marked when the store failed (a reply cut by an outage, left
    ``streaming`` for other machines): called once the store answers again. How many are left."""
    for message_id, status in list(_PENDING.items()):
        Message.update(status=status).where((Message.id == message_id) & (Message.status == "streaming")).execute()
        _PENDING.pop(message_id, None)
    return len(_PENDING)


def ping() -> None:
    """One statement: raises if the store does not answer (its server away)."""
    Message._meta.database.execute_sql("SELECT 1")
