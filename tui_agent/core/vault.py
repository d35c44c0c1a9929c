"""The vault: the one folder that holds all user data, and the one place that knows its layout."""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

VAULT_ENV = "TUI_AGENT_VAULT"
DEFAULT_VAULT_NAME = "jj_vault"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
        """Create whatever folders are missing; return self."""
        for folder in (self.root, self.media, self.uploads, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def relative(self, path: Path) -> str:
        """A vault path as the tools report it, e.g. ``media/food/pizza.png``."""
        return path.resolve().relative_to(self.root.resolve()).as_posix()


def resolve_vault_path(cli_value: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Resolution order: ``--vault`` > ``$TUI_AGENT_VAULT`` > ``./jj_vault`` if present > user data dir."""
    if cli_value:
        return Path(cli_value).expanduser().resolve()
    env_value = os.environ.get(VAULT_ENV)
    if env_value:
        return Path(env_value).expanduser().resolve()
    local = (cwd or Path.cwd()) / DEFAULT_VAULT_NAME
    if local.is_dir():
        return local.resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("tui-agent", appauthor=False)) / DEFAULT_VAULT_NAME


def open_vault(cli_value: str | os.PathLike[str] | None = None) -> Vault:
    """Resolve and initialise the vault."""
    return Vault(resolve_vault_path(cli_value)).init()


def setup_logging(vault: Vault, level: int = logging.INFO) -> None:
    """Send the ``tui_agent`` loggers to ``logs/agent.log`` (idempotent)."""
    logger = logging.getLogger("tui_agent")
    target = str(vault.log_file)
    for handler in logger.handlers:
        if getattr(handler, "baseFilename", None) == target:
            return
    handler = _LogFileHandler(target, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)


class _LogFileHandler(logging.handlers.RotatingFileHandler):
    """A log line that cannot be written (disk full) is dropped, not printed as a traceback to the user."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass
