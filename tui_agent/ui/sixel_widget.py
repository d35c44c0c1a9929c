"""textual-image's Sixel widget with our encoder (``tui_agent.ui.sixel``) and tmux passthrough.

textual-image injects the Sixel string into the widget's last line (cursor moves around it);
that part is kept, only the encoding is ours.
"""

from __future__ import annotations

from typing import Any


def sixel_image_class(colors: int, tmux: bool) -> type:
    from textual.app import ComposeResult
    from textual_image.widget import SixelImage
    from textual_image.widget.sixel import _ImageSixelImpl, _NoopRenderable

    from tui_agent.ui import sixel
    from tui_agent.ui.terminal_probe import tmux_wrap

    class _Impl(_ImageSixelImpl):
        def _image_to_sixels(self, image: Any, sixel_options: Any = None, background: Any = None) -> str:
            rgb = tuple(background[:3]) if background else (0, 0, 0)
            data = sixel.encode(image, colors, rgb)
            return tmux_wrap(data) if tmux else data

    class OurSixelImage(SixelImage, Renderable=_NoopRenderable):
        def compose(self) -> ComposeResult:
            yield _Impl(self.image, self._sixel_options)

    return OurSixelImage
