"""The conversation's images: open one full size (F3), download it (F4), all of them in a browser
tab (serve); the focused carousel's image, else the newest one on screen."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tui_agent.ui.widgets.carousel import ImageCarousel

if TYPE_CHECKING:
    from tui_agent.ui.host import ImagesHost


def _carousel(view: ImagesHost) -> ImageCarousel | None:
    focused = view.app.focused  # a carousel, or its arrow button
    held = next((n for n in focused.ancestors_with_self if isinstance(n, ImageCarousel)), None) if focused else None
    cursor = view.chat_log.cursor  # the message under the message cursor, when it holds pictures
    carousels = list((cursor or view.chat_log).query(ImageCarousel)) or list(view.chat_log.query(ImageCarousel))
    carousel = held or (carousels[-1] if carousels else None)
    if carousel is None:
        view.notify("No image in this conversation yet.")
    return carousel


def open_image(view: ImagesHost) -> None:
    """Open the focused carousel's image full size, else the newest image on screen."""
    if (carousel := _carousel(view)) is not None:
        carousel.action_open()


def _focused_or_newest_image(view: ImagesHost) -> Path | None:
    carousel = _carousel(view)
    return carousel.current if carousel is not None else None


def edit_picture(view: ImagesHost) -> None:
    """ "Edit this picture": ``/edit media/... `` in the composer, for the focused carousel's page,
    else the picture under the message cursor, else the newest; the user types what to change."""
    from tui_agent.core.media_files import relative_name
    from tui_agent.core.slash import edit_command
    from tui_agent.core.textsafe import clipboard_text

    if (path := _focused_or_newest_image(view)) is None:
        return
    composer = view.composer
    composer.load_text(clipboard_text(edit_command(relative_name(view.vault.root, path))))  # a stored name
    composer.move_cursor(composer.document.end)
    composer.focus()


async def download_image(view: ImagesHost) -> None:
    """Download the focused carousel's image, else the newest one (the browser saves the file)."""
    from tui_agent.ui.served_images import download_image

    if (path := _focused_or_newest_image(view)) is not None:
        await download_image(view.app, path, view.vault)


def open_gallery(view: ImagesHost) -> None:
    """In a browser (serve): a tab with this conversation's images, full size, left/right to page."""
    from tui_agent.ui.served_images import open_gallery

    if (path := _focused_or_newest_image(view)) is not None:
        open_gallery(view.app, view.vault, view.conversation_id, path)


async def open_full_size(view: ImagesHost, event: ImageCarousel.OpenRequested) -> None:
    """A carousel asked to open its image: the viewer pages through every image on screen."""
    from tui_agent.ui.image_show import open_full_size

    shown = [p for carousel in view.chat_log.query(ImageCarousel) for p in carousel.paths]
    await open_full_size(view.app, view.vault, event.path, list(dict.fromkeys(shown)) or event.paths)
