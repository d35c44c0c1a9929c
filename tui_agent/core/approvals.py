"""Settings that run a program or carry a key take effect on this machine only once approved here.

The store can be shared (a PostgreSQL database, a synced SQLite file): whoever can write it could
add an MCP server, point ``base_url`` elsewhere so the API key goes with it, or change the image
command. So the values that run a program, or send a key or the conversation somewhere, are used
on a machine only after that machine approved that exact value, once:

- an MCP server's transport, command, args, env, cwd, URL and headers;
- ``image_command`` (the command image backend);
- ``base_url`` and ``image_base_url`` with the key variable (``api_key_env``) they receive, and
  ``web_search_url``.

Approvals live outside the store, in this user's config folder
(``$XDG_CONFIG_HOME/tui-agent/approved-settings.json``, mode 0600, refused like ssh refuses a loose
``authorized_keys``: core.private_file), as hashes of the store's identity (its host, port and
database, or the SQLite file), the kind and the exact value. Nothing written into the store can
approve itself. Values this machine writes itself (``profile set``, the sidebar, ``mcp add``, the
first-run profile) are approved as they are written (``carry_over``, ``approve``).

``require`` is the one gate: the code that starts an MCP server, hands out the API key with the URL
it goes to, runs the image command or sends a web search calls it with the value it is about to use.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_agent.core.store.models import Profile

log = logging.getLogger("tui_agent.approvals")
APPROVALS_FILE_NAME = "approved-settings.json"
HOW = "review and approve it with `tui-agent approve`"


class NotApproved(Exception):
    """A setting is not approved on this machine; ``str()`` is the one line for the user."""

    def __init__(self, item: Item) -> None:
        super().__init__(f"{item.label}: not approved on this machine (changed in the shared store); {HOW}")
        self.item = item


class ApprovalsError(RuntimeError):
    """The approvals file cannot be read or written; ``str()`` is the one line for the user."""


@dataclass(frozen=True)
class Item:
    """One value that needs approval. ``value`` is what is used, exactly (canonical JSON); ``label``
    says what approving lets happen (shown, not hashed); ``where`` names the setting holding it."""

    kind: str  # "endpoint", "command" or "mcp"
    value: str
    label: str
    where: str = ""

    def digest(self, store: str) -> str:
        return hashlib.sha256(json.dumps([store, self.kind, self.value]).encode("utf-8")).hexdigest()


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def endpoint(url: str, key_env: str, where: str, what: str = "the conversation") -> Item:
    """A URL and the key variable whose value goes there with every request."""
    url = (url or "").rstrip("/")
    sent = f"${key_env} (an API key) and {what}" if key_env else what
    return Item("endpoint", _canonical([url, key_env or ""]), f"send {sent} to {url}", where)


def command(argv_json: str, where: str) -> Item:
    try:
        argv = json.loads(argv_json)
    except ValueError:
        argv = argv_json
    return Item("command", _canonical(argv), f"run the image command {_canonical(argv)}", where)


def mcp_server(name: str, value: dict[str, object], describe: str) -> Item:
    """An MCP server as it would start: everything that decides what runs or where it connects
    (not its name, policy or on/off switch)."""
    return Item("mcp", _canonical(value), f"start the MCP server {name}: {describe}", f"MCP server {name}")


def profile_slots(profile: Profile) -> dict[str, Item | None]:
    """Every guarded value of a profile, by slot, whether its backend is in use or not."""
    where = f"profile {profile.name}"
    images_url = profile.image_base_url or profile.base_url
    return {
        "chat": endpoint(profile.base_url, profile.api_key_env, f"{where}: base_url"),
        "images": endpoint(images_url, profile.api_key_env, f"{where}: image_base_url", "image prompts"),
        "command": command(profile.image_command, f"{where}: image_command"),
        "search": endpoint(profile.web_search_url, "", f"{where}: web_search_url", "web searches")
        if profile.web_search_url
        else None,
    }


def profile_items(profile: Profile) -> list[Item]:
    """The guarded values the profile uses now (its chosen image and search backends)."""
    slots = profile_slots(profile)
    used = ["chat", "images" if profile.image_backend == "openai" else "command"]
    if profile.web_search_backend == "searxng":
        used.append("search")
    return [item for name in used if (item := slots[name]) is not None]


# ---------------------------------------------------------------- the store
def store_identity() -> str:
    """The store the models are bound to, as this machine names it (never from the store's content)."""
    from tui_agent.core.store import backends
    from tui_agent.core.store.errors import StoreError

    try:
        return backends.current().identity()
    except StoreError:  # no store open
        return ""


# ------------------------------------------------------------ the approvals
def approvals_file() -> Path:
    from tui_agent.core.private_file import config_dir

    return config_dir() / APPROVALS_FILE_NAME


def _read() -> set[str]:
    from tui_agent.core import private_file

    path = approvals_file()
    try:
        raw = private_file.read_text(path)
    except private_file.UnsafeFileError as exc:
        raise ApprovalsError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ApprovalsError(f"cannot read {path} ({exc.__class__.__name__}: {exc}): fix or remove it") from None
    if raw is None:
        return set()
    try:
        digests = json.loads(raw)["approved"]
        if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
            raise TypeError("'approved' must be a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise ApprovalsError(f"{path} is not an approvals file ({exc}): fix or remove it") from None
    return set(digests)


def approved(item: Item, store: str | None = None) -> bool:
    """Approved on this machine for this store? An unusable approvals file approves nothing (logged)."""
    try:
        return item.digest(store_identity() if store is None else store) in _read()
    except ApprovalsError as exc:
        log.warning("%s", exc)
        return False


def pending(items: list[Item]) -> list[Item]:
    """The items not approved here, each value once. Raises ApprovalsError for an unusable file."""
    store = store_identity()
    have = _read()
    out: dict[str, Item] = {}
    for item in items:
        digest = item.digest(store)
        if digest not in have and digest not in out:
            out[digest] = item
    return list(out.values())


def require(item: Item) -> None:
    """The gate: raise NotApproved unless ``item`` is approved on this machine for this store."""
    if not approved(item):
        log.warning("withheld: %s", NotApproved(item))
        raise NotApproved(item)


def approve(items: list[Item]) -> None:
    """Remember the items as approved on this machine for the store the models are bound to."""
    if not items:
        return
    from tui_agent.core import private_file

    store = store_identity()
    path = approvals_file()
    try:
        with private_file.locked(path):
            have = _read()
            new = {item.digest(store) for item in items} - have
            if new:
                text = json.dumps({"version": 1, "approved": sorted(have | new)}, indent=1) + "\n"
                private_file.write_text(path, text)
    except private_file.UnsafeFileError as exc:
        raise ApprovalsError(str(exc)) from None


def approve_written(items: list[Item]) -> None:
    """Values this machine just wrote: approved here. An unusable approvals file does not undo the
    write (it is logged; the value is asked about where it is used)."""
    try:
        approve(items)
    except ApprovalsError as exc:
        log.warning("not approved as written: %s", exc)


def carry_over(before: dict[str, Item | None], after: dict[str, Item | None]) -> None:
    """A value written on this machine (``profile set``, the sidebar) is approved as it is written,
    when what it replaces was approved here (or was not set): writing ``api_key_env`` beside a
    ``base_url`` someone else put there does not approve sending the key to it."""
    approvable: list[Item] = []
    for slot, item in after.items():
        old = before.get(slot)
        if item is None or item == old:
            continue
        if old is None or approved(old):
            approvable.append(item)
    approve_written(approvable)
