"""Images follow the terminal's cell size: asked again after every resize (a tmux client attached
to a session started detached, a font change), and drawn again at the new size."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("tui_agent.ui.images")


async def follow_cell(app: Any) -> None:
    from tui_agent.ui.images import refresh_cell

    # Inside tmux this runs a tmux command: off the event loop. Never cancelled (the update and the
    # redraw belong together; a second resize runs its own, which finds nothing changed).
    cell = await asyncio.to_thread(refresh_cell)
    if cell is None:
        return
    log.info("terminal cell now %dx%d px: images drawn again at that size", *cell)
    from tui_agent.ui.screens.image_viewer import ImageViewerScreen
    from tui_agent.ui.widgets.carousel import ImageCarousel

    for screen in app.screen_stack:
        for carousel in screen.query(ImageCarousel):
            carousel.call_later(carousel._show, carousel.index)
        if isinstance(screen, ImageViewerScreen):
            screen._shown = None
            screen.call_later(screen._show)
