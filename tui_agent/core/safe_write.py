"""Writing a file only where asked: never through a symlink, never over a file unless told to.

``write_new(path, data)`` creates ``path`` with ``O_CREAT | O_EXCL | O_NOFOLLOW``: an existing file
or a symlink at that name (even a dangling one) is refused, so a link planted at an export's
default name cannot send the export elsewhere. With ``force`` an existing regular file is
replaced: the data goes to a new temporary file beside it, renamed over the name (a rename
replaces a symlink itself, never what it points to).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class TargetExists(OSError):
    """The target exists (a file, a folder or a symlink) and may not be replaced."""


def write_new(path: Path, data: bytes, *, force: bool = False, dir_fd: int | None = None) -> None:
    """Write ``data`` to ``path`` (a name in ``dir_fd`` when given), refusing what exists unless ``force``."""
    name = path.name if dir_fd is not None else str(path)
    try:
        fd = os.open(name, _FLAGS, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        if not force:
            raise TargetExists(f"{path} exists (give --force to replace it)") from None
        _replace(path, data, dir_fd)
        return
    _write_all(fd, data, path, name, dir_fd)


def _replace(path: Path, data: bytes, dir_fd: int | None) -> None:
    name = path.name if dir_fd is not None else str(path)
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        raise TargetExists(f"{path} is a folder")
    temporary = f".{path.name}.{secrets.token_hex(4)}.partial"
    temporary_name = temporary if dir_fd is not None else str(path.with_name(temporary))
    fd = os.open(temporary_name, _FLAGS, 0o644, dir_fd=dir_fd)
    _write_all(fd, data, path, temporary_name, dir_fd)
    os.replace(temporary_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _write_all(fd: int, data: bytes, path: Path, name: str, dir_fd: int | None) -> None:
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        os.unlink(name, dir_fd=dir_fd)
        raise


def open_folder(path: Path) -> int:
    """A folder's descriptor, made when missing; a symlink or a file there is refused."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise TargetExists(f"{path} is a symlink; nothing was written through it") from None
        if exc.filename is None:
            exc.filename = str(path)
        raise
