"""``/gallery/<conversation>``: a conversation's images, one at a time, full size, left/right to page.

A small page that shows ``/media/<path>`` (which does every file check) with links to the previous
and next image of the conversation, the arrow keys doing the same, and a download link. Everything
on it is escaped; its content security policy allows our own images and one inline script only.
Its links (the picture, the download, previous and next) are signed like every link the app opens.
"""

from __future__ import annotations

import asyncio
import html
import logging
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.serve")

Sign = Callable[..., str]  # Guard.sign: (path, query="") -> a link that works for a while

IMAGES_SQL = """
SELECT a.path FROM attachments AS a JOIN messages AS m ON m.id = a.message_id
WHERE m.conversation_id = {p} ORDER BY m.id, a.position
"""

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style nonce="{nonce}">
body {{ margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }}
nav {{ display: flex; gap: 1em; align-items: center; padding: .5em 1em; background: #1c1c1c; }}
nav a {{ color: #9cf; }} nav .name {{ flex: 1; }}
main {{ padding: 1em; }} img {{ max-width: none; image-rendering: auto; }}
</style></head>
<body><nav>{prev} <span class="counter">{counter}</span> {next}
<span class="name">{name}</span> <a id="download" href="{download}">Download</a></nav>
<main><img id="image" src="{src}" alt="{name}"></main>
<script nonce="{nonce}">
document.addEventListener("keydown", (event) => {{
  const link = document.getElementById(event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : "");
  if (link) location.href = link.href;
}});
</script></body></html>
"""


def conversation_images(vault: Vault, conversation: int) -> list[str]:
    """The conversation's image paths relative to ``media/``, in order, each once, pictures there
    are: in this vault's media/, or (PostgreSQL) in the database, fetched by ``/media/`` when shown.
    Read from the store the server was started on, whichever backend it is."""
    from tui_agent.core.store import backends, media_store
    from tui_agent.core.store.errors import DATABASE_ERRORS
    from tui_agent.core.store.models import Message

    database = Message._meta.database
    if database is None:
        return []
    try:
        store = backends.of(database)
        rows = store.execute(IMAGES_SQL.format(p=store.param), (conversation,)).fetchall()
        in_database = media_store.in_database()
        found: list[str] = []
        for (path,) in rows:
            stored = str(path)
            relative = stored.removeprefix("media/")
            if not stored.startswith("media/") or relative in found:
                continue
            if (vault.media / relative).is_file() or (in_database and media_store.exists(stored)):
                found.append(relative)
    except DATABASE_ERRORS:
        log.warning("the gallery of conversation %s could not be read", conversation, exc_info=True)
        return []
    return found


def render(conversation: int, images: list[str], at: str | None, nonce: str, sign: Sign) -> str:
    index = images.index(at) if at in images else len(images) - 1
    current = images[index]

    def link(label: str, step: int) -> str:
        if len(images) < 2:
            return ""
        target = images[(index + step) % len(images)]
        href = sign(f"/gallery/{conversation}", f"at={quote(target, safe='')}")
        return f'<a id="{label}" href="{html.escape(href)}">{"◀ previous" if step < 0 else "next ▶"}</a>'

    src = sign("/media/" + current)
    return PAGE.format(
        title=html.escape(f"{Path(current).name} · tui-agent"),
        nonce=nonce,
        prev=link("prev", -1),
        next=link("next", 1),
        counter=f"{index + 1} / {len(images)}",
        name=html.escape(current),
        src=html.escape(src),
        download=html.escape(sign("/media/" + current, "download=1")),
    )


def add_gallery_route(app: Any, vault_root: Path, sign: Sign) -> None:
    from aiohttp import web

    from tui_agent.core.vault import Vault

    vault = Vault(vault_root)

    async def handle_gallery(request: web.Request) -> web.StreamResponse:
        conversation = int(request.match_info["conversation"])
        images = await asyncio.to_thread(conversation_images, vault, conversation)
        if not images:
            return web.Response(status=404, text="404: no images in this conversation\n")
        nonce = secrets.token_urlsafe(16)
        page = render(conversation, images, request.query.get("at"), nonce, sign)
        policy = (
            f"default-src 'none'; img-src 'self'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        return web.Response(
            text=page,
            content_type="text/html",
            headers={"Content-Security-Policy": policy, "Cache-Control": "private, no-store"},
        )

    app.router.add_get(r"/gallery/{conversation:\d{1,12}}", handle_gallery, name="gallery")
