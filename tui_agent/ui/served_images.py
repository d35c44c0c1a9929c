"""Images under ``tui-agent serve``: full size in a new browser tab, or as a download.

The chat draws pictures inline at their real pixels (Sixel through the page's image addon); opening
an image (F3, ``o``, a click) opens ``/media/<path>`` in a new tab, where the browser shows the real
file at full size. The URL is relative: the server signs it on its way to the page (over the
session's websocket) and the browser resolves it against the page's own origin. Downloading stays
a separate action: the same link with ``download=1`` (the file comes as an attachment), so that
every ``serve`` behind one proxy can answer it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from textual.app import App

    from tui_agent.core.vault import Vault

# Set by ``tui-agent serve`` for its app processes: the server has the /media/ route.
MEDIA_ENV = "TUI_AGENT_MEDIA_ROUTE"


def media_relative(vault: Vault, path: Path) -> str | None:
    """``path`` relative to ``media/`` when served with the /media/ route and ``path`` is in media/."""
    if not os.environ.get(MEDIA_ENV):
        return None
    try:
        return path.resolve().relative_to(vault.media.resolve()).as_posix()
    except ValueError:
        return None


def media_url(vault: Vault, path: Path) -> str | None:
    """``/media/<path relative to media/>`` (see ``media_relative``)."""
    relative = media_relative(vault, path)
    return None if relative is None else os.environ[MEDIA_ENV].rstrip("/") + "/" + quote(relative)


async def open_served_image(app: App[Any], vault: Vault, path: Path) -> None:
    """Open ``path`` full size in a new browser tab (a download where the server has no /media/)."""
    url = media_url(vault, path)
    if url is None:
        await download_image(app, path, vault)
        return
    app.open_url(url, new_tab=True)
    app.notify(f"Opened {path.name} in a new browser tab")


async def download_image(app: App[Any], path: Path, vault: Vault | None = None) -> None:
    """The browser downloads the file; in a terminal, a copy in the downloads folder, as the
    full-size view's ``s`` makes it (Textual's ``deliver_binary`` writes a terminal's copy in text
    mode: an empty file, over an earlier copy of the same name)."""
    from tui_agent.ui.image_open import have_file

    if not await have_file(app, vault, path):
        return
    from tui_agent.ui.terminal_probe import served_in_browser

    if not served_in_browser():
        from tui_agent.ui.image_open import save_copy

        save_copy(app, path)  # says where it went, or why it did not
        return
    url = media_url(vault, path) if vault is not None else None
    if url is not None:
        # A signed /media/ link (the server signs it on its way to the page): any host behind a
        # proxy serves it, where Textual's own delivery lives only in this session's server.
        app.open_url(url + "?download=1", new_tab=True)
        app.notify(f"Downloading {path.name}")
        return
    mime = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}
    app.deliver_binary(path, open_method="download", mime_type=mime.get(path.suffix.lower(), "image/png"))
    app.notify(f"Downloading {path.name}")


def open_gallery(app: App[Any], vault: Vault, conversation_id: int | None, path: Path) -> None:
    """A new tab with the conversation's images at full size, starting at ``path`` (serve only)."""
    relative = media_relative(vault, path)
    if relative is None or conversation_id is None:
        app.notify("The image gallery opens in a browser: run tui-agent serve.", severity="warning")
        return
    at = quote(relative, safe="")
    app.open_url(f"/gallery/{conversation_id}?at={at}", new_tab=True)
    app.notify("Opened this conversation's images in a new browser tab")
