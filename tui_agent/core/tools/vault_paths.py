"""Path rules for tools that touch ``media/`` (seed 000): strict pattern, then canonical containment."""

from __future__ import annotations

import re
from pathlib import Path

from tui_agent.core.vault import Vault

GENERATE_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9/_-]*\.png", re.ASCII)
SHOW_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9/_.-]*\.(png|jpg|jpeg|gif|webp)", re.ASCII | re.IGNORECASE)
INVALID_PATH = "invalid path: must be relative, alphanumeric/dashes/underscores, end with .png"
MAX_NAME_BYTES = 255  # the longest file or folder name most file systems take
MAX_PATH_CHARS = 1024


class PathRejected(ValueError):
    pass


def media_path(vault: Vault, raw: str, pattern: re.Pattern[str] = GENERATE_RE, message: str = INVALID_PATH) -> Path:
    """Resolve ``raw`` (relative to ``media/``; a leading ``media/`` is accepted) or raise PathRejected.

    The canonical result (symlinks followed) must stay inside ``media/``.
    """
    if not isinstance(raw, str) or "\x00" in raw or "\\" in raw or raw.startswith("/") or ".." in raw:
        raise PathRejected(message)
    relative = raw[len("media/") :] if raw.startswith("media/") else raw
    if len(relative) > MAX_PATH_CHARS or any(len(part.encode()) > MAX_NAME_BYTES for part in relative.split("/")):
        raise PathRejected(f"{message} (a name is longer than {MAX_NAME_BYTES} bytes)")
    if not pattern.fullmatch(relative) or any(not part[:1].isalnum() for part in relative.split("/")):
        # Every folder and file name starts with a letter or digit: no hidden files, no empty parts.
        raise PathRejected(message)
    media = vault.media.resolve()
    target = (media / relative).resolve()
    if not target.is_relative_to(media) or target == media:
        raise PathRejected(f"{message} (it leads outside media/)")
    return target


def numbered(target: Path, count: int) -> list[Path]:
    """``name.png`` for one image, ``name-1.png`` ... ``name-N.png`` for several."""
    if count == 1:
        return [target]
    return [target.with_name(f"{target.stem}-{i}{target.suffix}") for i in range(1, count + 1)]
