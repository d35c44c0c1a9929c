"""How replies are parsed as Markdown: HTML is shown as text, never dropped.

Textual's default parser ("gfm-like") has HTML on, and its Markdown widget renders no HTML: a
reply saying "wrap it in a <div>" lost the tag, and one starting with ``<think>`` showed nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


def parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like", {"html": False})
