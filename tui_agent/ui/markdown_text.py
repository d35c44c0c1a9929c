"""How replies are parsed as Markdown: HTML is shown as text, never dropped.

Textual's default parser ("gfm-like") has HTML on, and its Markdown widget renders no HTML: a
reply saying "wrap it in a <div>" lost the tag, and one starting with ``<think>`` showed nothing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_local = threading.local()


def parser() -> MarkdownIt:
    """One parser per thread, reused: building one costs ~5 ms, and every Markdown widget asks for
    a parser on each update (a page of history is a dozen of them before the first paint)."""
    found: MarkdownIt | None = getattr(_local, "parser", None)
    if found is None:
        from markdown_it import MarkdownIt

        found = _local.parser = MarkdownIt("gfm-like", {"html": False})
    return found
