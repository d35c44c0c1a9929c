"""F3 / ``o``: an image at full size, in the app's image screen, or in a browser tab under ``serve``.

Apart from ``image_open`` (the viewer and the saved copy), which the image screen itself uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from tui_agent.core.vault import Vault


async def open_full_size(app: App[Any], vault: Vault, path: Path, paths: list[Path]) -> None:
    """F3 / ``o``: the in-app image screen (in a browser under ``serve``)."""
    from tui_agent.ui.image_open import have_file

    if not await have_file(app, vault, path):
        return
    from tui_agent.ui.terminal_probe import served_in_browser

    if served_in_browser():
        await open_in_browser(app, vault, path)
        return
    from tui_agent.ui.screens.image_viewer import ImageViewerScreen

    shown = paths if path in paths else [path]
    app.push_screen(ImageViewerScreen(shown, shown.index(path)))


async def open_in_browser(app: App[Any], vault: Vault, path: Path) -> None:
    """Under ``serve``: a new browser tab at the guarded ``/media/`` route (a download without it)."""
    from tui_agent.ui.served_images import open_served_image

    await open_served_image(app, vault, path)
