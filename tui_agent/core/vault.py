"""The vault: the one folder that holds all user data, and the one place that knows its layout."""

from __future__ import annotations

import errno
import logging
import logging.handlers
import os
import stat
from pathlib import Path

from tui_agent.core.store.errors import StoreError

VAULT_ENV = "TUI_AGENT_VAULT"
DEFAULT_VAULT_NAME = "jj_vault"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SHOWN_PATH_CHARS = 120
# The database and the files SQLite keeps beside it: each must be a plain file (a FIFO blocks the
# first read forever; a device or socket is worse).
DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


class VaultError(StoreError):
    """The vault folder cannot be used (not a folder, read-only, a part of it is the wrong kind
    of file); ``str()`` is the one line for the user. Nothing was written when it is raised."""


def shown(path: Path | str) -> str:
    """A path as it appears in a message: long ones (a 5,000-character --vault) cut in the middle."""
    text = str(path)
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    half = SHOWN_PATH_CHARS // 2
    return f"{text[:half]}…{text[-half:]} ({len(text):,} characters)"


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return "it is read-only"
    return exc.strerror or exc.__class__.__name__


class Vault:
    """Paths inside one vault folder (a value: equal, and hashed, by its root)."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Vault is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vault) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Vault(root={self.root!r})"

    def __reduce__(self) -> tuple[type[Vault], tuple[Path]]:  # copy and pickle build it anew
        return (Vault, (self.root,))

    @property
    def db_path(self) -> Path:
        return self.root / "agent.db"

    @property
    def media(self) -> Path:
        return self.root / "media"

    @property
    def uploads(self) -> Path:
        return self.media / "uploads"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / "agent.log"

    def init(self) -> Vault:
        """Check the layout, create whatever folders are missing; return self.

        Raises VaultError (one line) when the vault cannot be used: the folder is a file, one of
        its folders is a file, the database is not a plain file, the vault is read-only, or the
        path cannot be made. Everything is checked before anything is created.
        """
        try:
            self._check()
            for folder in (self.root, self.media, self.uploads, self.logs):
                folder.mkdir(parents=True, exist_ok=True)
            self._check_writable()
        except OSError as exc:
            where = self._part(Path(exc.filename) if isinstance(exc.filename, str) else self.root)
            raise VaultError(f"cannot use {shown(self.root)} as the vault: {where}{_reason(exc)}") from None
        return self

    def _part(self, path: Path) -> str:
        """How a message names ``path``: nothing for the vault itself, ``media: `` inside it."""
        if path == self.root:
            return ""
        if path.is_relative_to(self.root):
            return f"{path.relative_to(self.root).as_posix()}: "
        return f"{shown(path)}: "

    def _check(self) -> None:
        for folder in (self.root, self.media, self.uploads, self.logs):
            mode = _mode(folder)
            if mode is not None and not stat.S_ISDIR(mode):
                what = "the vault" if folder == self.root else f"the vault's {folder.name} folder"
                raise VaultError(
                    f"{shown(folder)} is a file, not a folder, so it cannot be {what}: move it aside "
                    "or choose another vault with --vault"
                )
        files = [(Path(f"{self.db_path}{suffix}"), "the database") for suffix in DB_SUFFIXES]
        for path, holds in [*files, (self.log_file, "the log")]:
            mode = _mode(path)
            if mode is not None and stat.S_ISDIR(mode) and path == self.db_path:
                raise VaultError(f"{shown(path)} is a folder, not a database: move it aside and run again")
            if mode is not None and not stat.S_ISREG(mode):
                raise VaultError(
                    f"{shown(path)} is not a plain file ({_kind(mode)}), so it cannot hold {holds}: "
                    "move it aside and run again"
                )

    def _check_writable(self) -> None:
        for path in (self.root, self.media, self.uploads, self.logs, self.db_path, self.log_file):
            if path.exists() and not os.access(path, os.W_OK):
                part = self._part(path).removesuffix(": ")
                detail = f" (its {part} is not writable)" if part else ""
                raise VaultError(
                    f"cannot use {shown(self.db_path)}: the vault is read-only{detail}; tui-agent writes "
                    "its database and log there: make it writable or choose another with --vault"
                )

    def relative(self, path: Path) -> str:
        """A vault path as the tools report it, e.g. ``media/food/pizza.png``."""
        return path.resolve().relative_to(self.root.resolve()).as_posix()


def resolve_vault_path(cli_value: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Resolution order: ``--vault`` > ``$TUI_AGENT_VAULT`` > ``./jj_vault`` if present > user data dir."""
    return resolve_vault(cli_value, cwd)[0]


def resolve_vault(cli_value: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> tuple[Path, bool]:
    """The vault's absolute path, and whether it was found by the ``./jj_vault`` rule (a folder
    that came with the current directory, not one the user named: see ``core.trust``)."""
    try:
        if cli_value:
            return Path(cli_value).expanduser().resolve(), False
        env_value = os.environ.get(VAULT_ENV)
        if env_value:
            return Path(env_value).expanduser().resolve(), False
        local = (cwd or Path.cwd()) / DEFAULT_VAULT_NAME
        if local.is_dir():
            return local.resolve(), True
    except OSError as exc:
        named = os.fspath(cli_value or os.environ.get(VAULT_ENV) or DEFAULT_VAULT_NAME)
        raise VaultError(f"cannot use {shown(named)} as the vault ({_reason(exc)})") from None
    import platformdirs

    return Path(platformdirs.user_data_dir("tui-agent", appauthor=False)) / DEFAULT_VAULT_NAME, False


def open_vault(cli_value: str | os.PathLike[str] | None = None) -> Vault:
    """Resolve and initialise the vault."""
    return Vault(resolve_vault_path(cli_value)).init()


def _mode(path: Path) -> int | None:
    """``st_mode`` of ``path`` (following links), None when nothing is there."""
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:  # a parent is a file: _check names that parent first
        return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def setup_logging(vault: Vault, level: int = logging.INFO) -> None:
    """Send the ``tui_agent`` loggers to ``logs/agent.log`` of ``vault`` (idempotent). The log of
    a vault opened before in this process is closed: its lines are not this vault's, and each
    handler kept a file open (a test run left hundreds open per process)."""
    logger = logging.getLogger("tui_agent")
    target = str(vault.log_file)
    for handler in list(logger.handlers):
        if not isinstance(handler, _LogFileHandler):
            continue
        if handler.baseFilename == target:
            return
        logger.removeHandler(handler)
        handler.close()
    try:
        handler = _LogFileHandler(target, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    except OSError as exc:
        raise VaultError(f"cannot write the log {shown(target)} ({_reason(exc)})") from None
    handler.setFormatter(_VisibleFormatter(LOG_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)


class _VisibleFormatter(logging.Formatter):
    """Log lines hold text from models, tools, servers and files: its control characters are
    written visible (textsafe.visible), so `tail -f agent.log` or `less -R` shows an escape sequence
    instead of acting on it."""

    def format(self, record: logging.LogRecord) -> str:
        from tui_agent.core.textsafe import visible

        return visible(super().format(record))


class _LogFileHandler(logging.handlers.RotatingFileHandler):
    """A log line that cannot be written (disk full) is dropped, not printed as a traceback to the user."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass
