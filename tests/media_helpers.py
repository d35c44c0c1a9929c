"""Pictures in tests, whatever the store: gone for good (the file and, with PostgreSQL, the
database's copy), or only gone from a vault's cache."""

from __future__ import annotations

from pathlib import Path

from tui_agent.core.store import media_store, portable
from tui_agent.core.store.models import Message


def remove_picture(vault_root: Path, relative: str) -> None:
    """``media/...`` gone from the vault and, with PostgreSQL, from the database (its path row)."""
    (vault_root / relative).unlink()
    if media_store.in_database():
        portable.execute(Message._meta.database, "DELETE FROM media_paths WHERE path = ?", (relative,))


def damage_picture(relative: str) -> None:
    """The database's copy of ``media/...`` no longer matches its sha256 (PostgreSQL only)."""
    portable.execute(
        Message._meta.database,
        "UPDATE media_blobs SET data = ? WHERE sha256 = (SELECT sha256 FROM media_paths WHERE path = ?)",
        (b"\x89PNG damaged", relative),
    )
