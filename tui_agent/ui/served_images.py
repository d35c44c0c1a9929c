"""Images under ``tui-agent serve``: full size in a new browser tab, or as a download.

The browser's terminal (xterm.js) shows only half-cell pictures, so opening an image (F3, ``o``, a
click) opens ``/media/<path>`` in a new tab, where the browser shows the real file. The URL is
relative: the browser resolves it against the page's own origin, the one the token cookie belongs
to. Downloading stays a separate action.
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


def media_url(vault: Vault, path: Path) -> str | None:
    """``/media/<path relative to media/>`` when served with the route and ``path`` is in media/."""
    route = os.environ.get(MEDIA_ENV)
    if not route:
        return None
    try:
        relative = path.resolve().relative_to(vault.media.resolve())
    except ValueError:
        return None
    return route.rstrip("/") + "/" + quote(relative.as_posix())


def open_served_image(app: App[Any], vault: Vault, path: Path) -> None:
    """Open ``path`` full size in a new browser tab (a download where the server has no /media/)."""
    url = media_url(vault, path)
    if url is None:
        download_image(app, path)
        return
    app.open_url(url, new_tab=True)
    app.notify(f"Opened {path.name} in a new browser tab")


def download_image(app: App[Any], path: Path) -> None:
    """The browser downloads the file (in a terminal: a copy in the downloads folder)."""
    if not path.is_file():
        app.notify(f"{path.name} is no longer in the vault", severity="error")
        return
    mime = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}
    app.deliver_binary(path, open_method="download", mime_type=mime.get(path.suffix.lower(), "image/png"))
    app.notify(f"Downloading {path.name}")
