"""Is a file of ours safe to believe? The rules ssh applies to ``authorized_keys`` (StrictModes).

The trust list and the approvals decide what runs on this machine: a line someone else could add
must not count. Such a file is refused when it is a symlink or not a plain file, is owned by another
user, or can be written by the group or by everyone; and so is the folder holding it, and every
folder above it up to the home folder (or ``/``), when one of them is writable by others, or owned
by someone other than the user or root (a root-owned sticky folder like ``/tmp`` is fine: others
cannot replace what is ours in it).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path


def config_dir() -> Path:
    """This user's tui-agent config folder (platformdirs: ``$XDG_CONFIG_HOME/tui-agent``)."""
    import platformdirs

    return Path(platformdirs.user_config_dir("tui-agent", appauthor=False))


class UnsafeFileError(RuntimeError):
    """``str()`` is the one line for the user, naming the path and the problem."""


def _owner_ok(st: os.stat_result) -> bool:
    return st.st_uid in (os.getuid(), 0)


def check_folder(folder: Path) -> None:
    """Raise UnsafeFileError when ``folder`` or one above it (up to home, or ``/``) lets others in."""
    home = Path(os.path.expanduser("~")).absolute()
    current = folder.absolute()
    while True:
        try:
            st = current.stat()
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise UnsafeFileError(f"cannot check {current} ({exc.strerror or exc})") from None
        if st is not None:
            if not _owner_ok(st):
                raise UnsafeFileError(f"refused: {current} is owned by another user (uid {st.st_uid})")
            sticky_root = st.st_mode & stat.S_ISVTX and st.st_uid == 0
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_root:
                raise UnsafeFileError(
                    f"refused: the folder {current} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
                    f"chmod go-w {current}"
                )
        if current == home or current.parent == current:
            return
        current = current.parent


def check_file(path: Path) -> bool:
    """Raise UnsafeFileError when ``path`` (or its folder) may have been written by someone else.
    False when there is no file (nothing to believe); True when it may be read."""
    check_folder(path.parent)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UnsafeFileError(f"cannot check {path} ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError(f"refused: {path} is a symbolic link: replace it with the file itself")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(f"refused: {path} is not a plain file")
    if st.st_uid != os.getuid():
        raise UnsafeFileError(f"refused: {path} is owned by another user (uid {st.st_uid}): remove it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeFileError(
            f"refused: {path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
            f"check it, then chmod 600 {path}"
        )
    return True


def read_text(path: Path) -> str | None:
    """The file's text once it passed ``check_file`` (opened without following a link, checked again
    on the open file); None when there is none. Raises UnsafeFileError, OSError, UnicodeDecodeError."""
    if not check_file(path):
        return None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"refused: {path} changed while it was read: check it")
        return handle.read().decode("utf-8")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One writer of ``path`` at a time (a lock file beside it); the folder is made private if new.
    Raises UnsafeFileError when the folder cannot be used."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_folder(folder)
        handle = os.open(folder / f".{path.name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise UnsafeFileError(f"cannot write in {folder} ({exc.strerror or exc})") from None
    try:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # not on this platform: one writer is the usual case anyway
            pass
        yield
    finally:
        os.close(handle)


def write_text(path: Path, text: str) -> None:
    """Atomically: a private temporary file beside it, then renamed over it (mode 0600)."""
    import tempfile

    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temp, 0o600)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UnsafeFileError(f"cannot write {path} ({exc.strerror or exc})") from None
