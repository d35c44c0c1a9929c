"""The local file of a vault picture, whichever store keeps it: the one helper every reader calls,
and the one writers call to keep a new picture.

With a SQLite store a picture lives in the vault's ``media/`` only. With PostgreSQL the database
holds every picture too (``store/media_store``: content-addressed, written once) and ``media/`` is
a cache: a picture made on another machine (another vault folder on the same database) is fetched
into it the first time anything here reads it (the context for the model, the image widgets,
``/media/`` under ``serve``, an export), with no step by the user.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tui_agent.core.store import media_store
from tui_agent.core.store.errors import DATABASE_ERRORS, StoreError, describe

log = logging.getLogger("tui_agent.media")
STORE_FAILURES: tuple[type[BaseException], ...] = (StoreError, *DATABASE_ERRORS)


class MediaUnavailable(FileNotFoundError):
    """The picture is in neither this vault's ``media/`` nor the database, its stored copy is
    damaged, or the database cannot be reached; ``str()`` is one line. An OSError, so a reader
    that handles a missing file handles this too."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing  # simply nowhere (not damaged, not unreachable)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "picture not available"


def relative_name(vault_root: Path, path: Path | str) -> str:
    """``media/...`` for a stored vault-relative path or a file path inside the vault."""
    if isinstance(path, str):
        return path
    for candidate, root in ((path, vault_root), (path.resolve(), vault_root.resolve())):
        if candidate.is_relative_to(root):
            return candidate.relative_to(root).as_posix()
    return str(path)


def local_file(vault_root: Path | None, path: Path | str) -> Path:
    """The file on this machine for ``path`` (``media/...`` as stored, or the file's path in the
    vault), fetched from the database first when the store keeps pictures and this vault has not
    got it yet. Raises MediaUnavailable (one line) when it cannot be had."""
    if vault_root is None:  # no vault known (a widget in a plain app): the file as it is
        target = Path(path)
        if not target.is_file():
            raise MediaUnavailable(f"{target.name} is not in the vault", missing=True)
        return target
    relative = relative_name(vault_root, path)
    target = vault_root / relative
    if target.is_file():
        return target
    try:
        keeps_pictures = media_store.in_database()
    except DATABASE_ERRORS:
        keeps_pictures = False
    if not keeps_pictures:
        raise MediaUnavailable(f"{relative} is not in the vault", missing=True)
    _check_path(vault_root, relative)
    try:
        found = media_store.cached(vault_root, relative)
    except media_store.BrokenPicture as exc:
        log.warning("%s", exc)
        raise MediaUnavailable(str(exc)) from None
    except STORE_FAILURES as exc:
        raise MediaUnavailable(f"{relative} could not be fetched: {describe(exc)}") from None
    except OSError as exc:
        raise MediaUnavailable(f"{relative} could not be kept in this vault's media/: {exc.strerror or exc}") from None
    if found is None:
        raise MediaUnavailable(f"{relative} is neither in this vault nor in the database", missing=True)
    return found


def _check_path(vault_root: Path, relative: str) -> None:
    """Only an image path inside ``media/`` is ever written from the database (a row names it)."""
    from tui_agent.core.tools.vault_paths import SHOW_RE, PathRejected, media_path
    from tui_agent.core.vault import Vault

    try:
        target = media_path(Vault(vault_root), relative, SHOW_RE)
    except PathRejected:
        raise MediaUnavailable(f"{relative} is not an image path under media/") from None
    if not relative.startswith("media/") or target != (vault_root / relative).resolve():
        raise MediaUnavailable(f"{relative} is not an image path under media/")


def taken(vault_root: Path, relative: str) -> bool:
    """Whether a picture has the path already: in this vault, or (PostgreSQL) in the database,
    even if no picture of it is in this machine's cache (another machine made it). StoreError
    (one line) when the database cannot be asked."""
    if (vault_root / relative).exists():
        return True
    try:
        return media_store.in_database() and media_store.exists(relative)
    except DATABASE_ERRORS as exc:
        raise describe(exc) from None


def keep(vault_root: Path, path: Path | str, data: bytes | None = None, mime: str | None = None) -> bool:
    """A new picture in this vault's ``media/``, written through to the database when the store
    keeps pictures. False when the database has another picture under that path already (made
    elsewhere first: the seed's ``exists:``). Store failures raise StoreError (one line)."""
    if not media_store.in_database():
        return True
    relative = relative_name(vault_root, path)
    content = data if data is not None else (vault_root / relative).read_bytes()
    try:
        return media_store.claim(relative, content, mime)
    except DATABASE_ERRORS as exc:
        raise describe(exc) from None


def unkeep(vault_root: Path, path: Path | str, data: bytes) -> None:
    """Take back what ``keep`` stored (all or nothing: a set of pictures that failed as a whole)."""
    if media_store.in_database():
        try:
            media_store.forget(relative_name(vault_root, path), data)
        except DATABASE_ERRORS:
            log.warning("could not take back %s from the database", path, exc_info=True)
