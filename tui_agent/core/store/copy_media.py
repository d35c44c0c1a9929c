"""The pictures ``db copy`` moves: files under a vault's ``media/`` (a SQLite store's pictures) or
``media_blobs``/``media_paths`` (a PostgreSQL store's, content-addressed, written once).

A picture is named by its vault-relative path (``media/fox/red-1.png``), as attachments name it.
Paths come from the source store, so each is checked before any file is read or written: relative,
under ``media/``, no ``..``, and still inside ``media/`` once symlinks are followed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

import peewee as pw

from tui_agent.core.store import backends
from tui_agent.core.store.copy_tables import columns
from tui_agent.core.store.media_store import MIME_BY_SUFFIX
from tui_agent.core.store.models import utcnow


def safe_relative(path: str) -> bool:
    """Whether ``path`` is one a picture may have: ``media/...``, relative, no ``.``/``..`` parts."""
    if not isinstance(path, str) or "\\" in path or "\x00" in path:
        return False
    parts = PurePosixPath(path).parts
    return len(parts) >= 2 and parts[0] == "media" and not any(part in (".", "..", "") for part in parts)


def _inside(root: Path, path: str) -> Path | None:
    """``root/path`` when, symlinks followed, it stays inside ``root/media``; else None."""
    media = (root / "media").resolve()
    target = root / path
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError):
        return None
    return target if resolved.is_relative_to(media) and resolved != media else None


def _has_media_tables(db: pw.Database) -> bool:
    return backends.of(db).keeps_pictures and columns(db, "media_paths") is not None


def picture_paths(db: pw.Database) -> list[str]:
    """Every picture a store names: its attachments' paths and, in PostgreSQL, its ``media_paths``."""
    found: set[str] = set()
    if columns(db, "attachments") is not None:
        found.update(str(row[0]) for row in backends.of(db).execute("SELECT DISTINCT path FROM attachments").fetchall())
    if _has_media_tables(db):
        found.update(str(row[0]) for row in backends.of(db).execute("SELECT path FROM media_paths").fetchall())
    return sorted(found)


def _digests(db: pw.Database) -> dict[str, tuple[str, str]]:
    """PostgreSQL: path -> (sha256, mime) of every picture in the database."""
    if not _has_media_tables(db):
        return {}
    sql = "SELECT p.path, b.sha256, b.mime FROM media_paths p JOIN media_blobs b ON b.sha256 = p.sha256"
    return {str(path): (str(sha), str(mime)) for path, sha, mime in backends.of(db).execute(sql).fetchall()}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Pictures:
    """One side's pictures: in its database (PostgreSQL) and/or under ``root/media`` (a vault)."""

    def __init__(self, db: pw.Database, root: Path | None) -> None:
        self.db = db
        self.root = root
        self.stored = _digests(db)

    def file(self, path: str) -> Path | None:
        if self.root is None:
            return None
        return _inside(self.root, path)

    def digest(self, path: str) -> str | None:
        """The picture's sha256, None when this side has no picture at ``path``."""
        if path in self.stored:
            return self.stored[path][0]
        target = self.file(path)
        if target is None or not target.is_file():
            return None
        return sha256_file(target)

    def has(self, path: str) -> bool:
        if path in self.stored:
            return True
        target = self.file(path)
        return target is not None and target.is_file()

    def read(self, path: str) -> tuple[bytes, str] | None:
        """The picture's bytes and type, None when this side does not have it."""
        mime = MIME_BY_SUFFIX.get(PurePosixPath(path).suffix.lower(), "application/octet-stream")
        if path in self.stored:
            store = backends.of(self.db)
            sql = (
                "SELECT b.data FROM media_paths p JOIN media_blobs b ON b.sha256 = p.sha256"
                f" WHERE p.path = {store.param}"
            )
            row = store.execute(sql, (path,)).fetchone()
            if row is not None:
                data, digest = bytes(row[0]), self.stored[path][0]
                if hashlib.sha256(data).hexdigest() != digest:  # stored by content hash: anything else is damage
                    raise OSError(f"its bytes in the source do not match their sha256 {digest[:16]}… (damaged)")
                return data, self.stored[path][1]
        target = self.file(path)
        if target is None or not target.is_file():
            return None
        return target.read_bytes(), mime

    def same_file(self, other: Pictures, path: str) -> bool:
        """Both sides' file for ``path`` is one file (two stores of one vault): nothing to compare."""
        mine, theirs = self.file(path), other.file(path)
        try:
            return mine is not None and theirs is not None and mine.is_file() and os.path.samefile(mine, theirs)
        except OSError:
            return False

    def write(self, path: str, data: bytes, mime: str) -> bool:
        """Keep the picture (never over another one); False when the path was taken meanwhile by
        the same bytes (another copy got there first)."""
        store = backends.of(self.db)
        if store.keeps_pictures:
            digest = hashlib.sha256(data).hexdigest()
            store.execute(
                f"INSERT INTO media_blobs (sha256, size, mime, data, created_at) VALUES ({store.placeholders(5)})"
                " ON CONFLICT (sha256) DO NOTHING",
                (digest, len(data), mime, data, utcnow()),
            )
            store.execute(
                f"INSERT INTO media_paths (path, sha256, created_at) VALUES ({store.placeholders(3)})",
                (path, digest, utcnow()),
            )
            return True
        assert self.root is not None
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.file(path) is None:  # a symlinked folder on the way leads out of media/
            raise OSError(f"{target.parent} leads out of {self.root / 'media'}")
        temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
        temporary.write_bytes(data)
        try:
            os.link(temporary, target)  # fails if the path exists: nothing is overwritten
        except FileExistsError:
            if target.read_bytes() != data:
                raise OSError(f"{target} appeared meanwhile with other bytes; it was left as it is") from None
            return False
        finally:
            temporary.unlink(missing_ok=True)
        return True
