"""A reply the store could not take (the PostgreSQL server went away mid-turn, the disk filled up):
kept in the vault's ``recovered/`` folder, one Markdown file per reply, so that nothing the model
wrote is lost; the turn's error line says where."""

from __future__ import annotations

import logging
import secrets
import time
from pathlib import Path

from tui_agent.core.safe_write import write_new
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.loop")
FOLDER = "recovered"


def keep_locally(
    vault: Vault, conversation_id: int, message_id: int | None, model: str, text: str, reasoning: str
) -> Path | None:
    """Write the reply so far to ``VAULT/recovered/``; its path (None: nothing to keep, or no room)."""
    if not text and not reasoning:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    row = f", message {message_id} (stored only up to its last save)" if message_id else ""
    header = f"<!-- tui-agent: a reply the store could not take: conversation {conversation_id}{row}, model {model}, "
    header += f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} -->\n\n"
    thinking = f"<details><summary>Thinking</summary>\n\n{reasoning}\n\n</details>\n\n" if reasoning else ""
    path = vault.root / FOLDER / f"{stamp}-conversation-{conversation_id}-{secrets.token_hex(3)}.md"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new(path, (header + thinking + text + "\n").encode())
    except OSError as exc:
        log.error("could not keep the reply in %s: %s", path, exc)
        return None
    log.warning("the store failed mid-reply: the reply so far is kept in %s", path)
    return path


def kept_note(exc: BaseException) -> str:
    """The end of the turn's error line when the reply was kept (see loop._request)."""
    path = getattr(exc, "kept_in", None)
    return f"; the reply so far is kept in {path}" if path else ""
