"""Pictures in the database (PostgreSQL stores): content-addressed blobs, written once, and the
vault-relative path each picture has (``media/fox/red-1.png``).

With a SQLite store the vault's ``media/`` folder is where pictures live (nothing here is used).
With PostgreSQL the database holds every picture, so that a picture made on machine A shows on
machine B; each vault's ``media/`` is then a cache, filled on demand (``cached``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import peewee as pw

from tui_agent.core.store import backends
from tui_agent.core.store.models import Message, utcnow

MIME_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}


class BrokenPicture(Exception):
    """A stored picture whose bytes do not match their sha256; ``str()`` is one line."""


def _db() -> pw.Database:
    return Message._meta.database


def in_database() -> bool:
    """Whether pictures are kept in the bound store (one several machines share) rather than only in media/."""
    database = _db()
    return database is not None and backends.of(database).keeps_pictures


def _execute(sql: str, params: tuple[object, ...]) -> Any:
    """``sql`` with ``{p}`` for each placeholder (the store's own: peewee's ``Database.param``)."""
    store = backends.of(_db())
    return store.execute(sql.format(p=store.param), params)


def put(relative_path: str, data: bytes, mime: str | None = None) -> str:
    """Store a picture under its vault-relative path (``media/...``); returns its sha256. The
    bytes are written once whatever the number of paths naming them; a path keeps its first
    picture (the seed's rule: a path that exists is never overwritten)."""
    digest = hashlib.sha256(data).hexdigest()
    kind = mime or MIME_BY_SUFFIX.get(Path(relative_path).suffix.lower(), "application/octet-stream")
    database = _db()
    with database.atomic():
        _execute(
            "INSERT INTO media_blobs (sha256, size, mime, data, created_at) VALUES ({p}, {p}, {p}, {p}, {p})"
            " ON CONFLICT (sha256) DO NOTHING",
            (digest, len(data), kind, data, utcnow()),
        )
        _execute(
            "INSERT INTO media_paths (path, sha256, created_at) VALUES ({p}, {p}, {p}) ON CONFLICT (path) DO NOTHING",
            (relative_path, digest, utcnow()),
        )
    return digest


def get(relative_path: str) -> bytes | None:
    """The picture stored under ``relative_path``, or None."""
    cursor = _execute(
        "SELECT b.data FROM media_paths p JOIN media_blobs b ON b.sha256 = p.sha256 WHERE p.path = {p}",
        (relative_path,),
    )
    row = cursor.fetchone()
    return bytes(row[0]) if row is not None else None


def fetch(relative_path: str) -> bytes | None:
    """Like ``get``, the bytes checked against their sha256 and size: BrokenPicture (one line)
    when they do not match (a damaged row never reaches a cache, a model or a browser)."""
    cursor = _execute(
        "SELECT b.data, b.sha256, b.size FROM media_paths p JOIN media_blobs b ON b.sha256 = p.sha256"
        " WHERE p.path = {p}",
        (relative_path,),
    )
    row = cursor.fetchone()
    if row is None:
        return None
    data = bytes(row[0]) if row[0] is not None else b""
    if hashlib.sha256(data).hexdigest() != row[1] or len(data) != int(row[2]):
        raise BrokenPicture(
            f"the database's copy of {relative_path} is damaged ({len(data):,} bytes that do not match "
            f"their sha256 {str(row[1])[:12]}…): make the picture again"
        )
    return data


def claim(relative_path: str, data: bytes, mime: str | None = None) -> bool:
    """``put``, and whether ``relative_path`` now names these bytes (False: another picture had the
    path first, perhaps made on another machine: the seed's ``exists:``)."""
    digest = put(relative_path, data, mime)
    return stored_digest(relative_path) == digest


def stored_digest(relative_path: str) -> str | None:
    cursor = _execute("SELECT sha256 FROM media_paths WHERE path = {p}", (relative_path,))
    row = cursor.fetchone()
    return str(row[0]) if row is not None else None


def forget(relative_path: str, data: bytes) -> None:
    """Take back a path this process claimed for ``data`` (a set of pictures that failed as a whole);
    the bytes stay (content-addressed: another path may name them)."""
    digest = hashlib.sha256(data).hexdigest()
    _execute("DELETE FROM media_paths WHERE path = {p} AND sha256 = {p}", (relative_path, digest))


def exists(relative_path: str) -> bool:
    cursor = _execute("SELECT 1 FROM media_paths WHERE path = {p}", (relative_path,))
    return cursor.fetchone() is not None


def cached(vault_root: Path, relative_path: str) -> Path | None:
    """The picture's file in this vault, fetched from the database first when it is not there
    (another machine made it). None when neither has it; BrokenPicture when the database's copy is
    damaged. Callers check the path first (``core/media_files.local_file`` does)."""
    target = vault_root / relative_path
    if target.is_file():
        return target
    if not in_database():
        return None
    data = fetch(relative_path)
    if data is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    # A name of this thread's own: two readers may fetch the same picture at once.
    temporary = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target
