"""Which vaults may run programs and use your API key.

A vault found by the ``./jj_vault`` rule came with the current folder (a cloned repository can
ship one), so it is *untrusted* until you trust it once: it can be read and used, but its MCP
servers and its image command are not run, and the API key variable its profile names is not read
or sent. A vault you chose (``--vault``, ``$TUI_AGENT_VAULT``) and your own one in the user data
folder are trusted. Like git's ``safe.directory`` or direnv's ``allow``, the answer is remembered
per absolute (resolved) path, in your own config folder, outside any vault:
``$XDG_CONFIG_HOME/tui-agent/trusted-vaults.json`` (platformdirs' user config dir).

The process has one vault; ``set_current`` records whether it is trusted, and the places that would
run a program or send a key ask ``untrusted_vault()`` first.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_agent.core.store.models import Profile

log = logging.getLogger("tui_agent.trust")
TRUST_FILE_NAME = "trusted-vaults.json"


class TrustStoreError(RuntimeError):
    """The trust list cannot be read or written; ``str()`` is the one line for the user."""


class _Current:
    untrusted: Path | None = None  # the vault of this process, when it is not trusted


def config_dir() -> Path:
    from tui_agent.core.private_file import config_dir as user_config_dir

    return user_config_dir()


def trust_file() -> Path:
    return config_dir() / TRUST_FILE_NAME


def key(path: Path | str) -> str:
    """How the trust list names a vault: its absolute, resolved path."""
    return _key(path)


def _key(path: Path | str) -> str:
    return str(Path(path).expanduser().resolve())


def trusted_paths() -> list[str]:
    """The trusted vault paths; raises TrustStoreError when the file is there but unusable, or when
    someone else could have written it (another owner, writable by others, a symlink, in a folder
    others can write: core.private_file, the rules ssh applies to authorized_keys)."""
    from tui_agent.core import private_file

    path = trust_file()
    try:
        raw = private_file.read_text(path)
        if raw is None:
            return []
    except FileNotFoundError:
        return []
    except private_file.UnsafeFileError as exc:
        raise TrustStoreError(f"{exc} (the trust list is not used)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustStoreError(f"cannot read {path} ({exc.__class__.__name__}: {exc}): fix or remove it") from None
    try:
        data = json.loads(raw)
        paths = data["trusted"]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise TypeError("'trusted' must be a list of paths")
    except (ValueError, KeyError, TypeError) as exc:
        raise TrustStoreError(f"{path} is not a trust list ({exc}): fix or remove it") from None
    return paths


def is_trusted(vault_root: Path | str) -> bool:
    """Is this vault in the trust list? An unreadable list trusts nothing (and says so in the log)."""
    try:
        return _key(vault_root) in trusted_paths()
    except TrustStoreError as exc:
        log.warning("%s", exc)
        return False


def trust(vault_root: Path | str) -> bool:
    """Add the vault to the trust list; False if it was there already."""
    return _change(_key(vault_root), add=True)


def untrust(vault_root: Path | str) -> bool:
    """Remove the vault from the trust list; False if it was not there."""
    return _change(_key(vault_root), add=False)


def _change(key: str, add: bool) -> bool:
    with _locked():
        paths = trusted_paths()
        if (key in paths) == add:
            return False
        paths = [*paths, key] if add else [p for p in paths if p != key]
        _write(paths)
    return True


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One writer at a time (two ``vault trust`` at once must not lose either)."""
    from tui_agent.core import private_file

    folder = config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        private_file.check_folder(folder)
        handle = os.open(folder / f".{TRUST_FILE_NAME}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except private_file.UnsafeFileError as exc:
        raise TrustStoreError(str(exc)) from None
    except OSError as exc:
        raise TrustStoreError(f"cannot write in {folder} ({exc.strerror or exc})") from None
    try:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # not on this platform: one writer is the usual case anyway
            pass
        yield
    finally:
        os.close(handle)


def _write(paths: list[str]) -> None:
    """Atomically: a private temporary file beside it, then renamed over it (mode 0600)."""
    import tempfile

    target = trust_file()
    text = json.dumps({"version": 1, "trusted": paths}, indent=2) + "\n"
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{TRUST_FILE_NAME}.", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temp, 0o600)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise TrustStoreError(f"cannot write {target} ({exc.strerror or exc})") from None


# ------------------------------------------------------------- this process
def set_current(vault_root: Path, trusted: bool) -> None:
    _Current.untrusted = None if trusted else vault_root


def untrusted_vault() -> Path | None:
    """The vault of this process when it is not trusted (None: programs and keys may be used)."""
    return _Current.untrusted


def _name(vault_root: Path | str) -> str:
    """The path in full (the command to copy must work), control characters made visible."""
    from tui_agent.core.textsafe import visible

    return visible(str(vault_root))


def how_to_trust(vault_root: Path | str) -> str:
    return f"trust it with `tui-agent vault trust {_name(vault_root)}` (or name it with --vault)"


def withheld(what: str) -> str | None:
    """The one-line reason ``what`` is not done in this process, or None when it may be."""
    root = _Current.untrusted
    if root is None:
        return None
    return f"{what}: the vault {_name(root)} came with the current folder and is not trusted; {how_to_trust(root)}"


def what_it_would_do(profile: Profile) -> list[str]:
    """What trusting the vault would let its profile do (one line each, for the dialog)."""
    from tui_agent.core.mcp import config as mcp_config

    lines = [f"start the MCP server {s.name}: {s.describe()}" for s in mcp_config.enabled_servers(profile)]
    if profile.image_backend == "command":
        lines.append(f"run the image command {profile.image_command}")
    if profile.api_key_env:
        lines.append(f"send your ${profile.api_key_env} (an API key) to {profile.base_url}")
    return lines
