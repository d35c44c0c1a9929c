"""Replies from history drawn without Textual's Markdown widget, when that changes nothing.

Opening a conversation spent a quarter of its first paint on Markdown: importing markdown-it and
Textual's Markdown module, parsing each reply and mounting a widget per block. Most replies in a
chat are plain paragraphs with some **bold**, *italic* and `code`. For those, :func:`preview` builds
the same Content that Markdown's paragraphs would (same text, same wrapping, the same inline styles
through the same component classes), drawn by one :class:`ReplyPreview` widget.

Anything else (a heading, a list, a link, an entity, a backslash, HTML, a table, ...) is not
``exact``: it gets the Markdown widget from the start (drawn as text first and converted after,
it showed raw Markdown for a moment and the log jumped once per reply).
"""

from __future__ import annotations

import re

from textual.content import Content, Span
from textual.widgets import Static

# Characters and line shapes that make Markdown render differently from plain paragraphs. Checked
# loosely: a false alarm costs only the real Markdown widget.
NOT_PLAIN = re.compile(
    r"""[\\&<>\[\]!_~|#=+^$]        # escapes, entities, HTML, links, images, tables, headings...
    | ^[ \t]*(?:[-*]|\d+[.)])[ \t]  # list items
    | ^[ \t]*-+[ \t]*$              # setext underline, thematic break
    | ^[ ]{4} | ^\t                 # indented code
    | [ ]{2,}$                      # hard line breaks
    | \w\.\w | :// | @              # what linkify could turn into a link
    | \*\*\* | ``                   # nested or long delimiter runs
    """,
    re.M | re.X,
)
INLINE = re.compile(r"`([^`\s](?:[^`\n]*[^`\s])?)`|\*\*([^*\s](?:[^*]*[^*\s])?)\*\*|\*([^*\s](?:[^*]*[^*\s])?)\*")
STYLE_OF_GROUP = {1: ".code_inline", 2: ".strong", 3: ".em"}
OPENS_AFTER = ("", " ", "(", '"', "'")  # an emphasis run opens at the start or after these...
CLOSES_BEFORE = ("", " ", ".", ",", ";", ":", "?", ")", '"', "'")  # ...and closes before these


def _paragraphs(text: str) -> list[str]:
    blocks = re.split(r"\n[ \t]*\n", text.strip())
    return [" ".join(line.strip() for line in block.splitlines()) for block in blocks if block]


def _text(text: str) -> str:
    return re.sub(r"\s+", " ", text)  # as Markdown's text nodes (code spans are kept as they are)


def _inline(paragraph: str) -> Content | None:
    """The paragraph as Markdown would style it, or ``None`` when not sure."""
    plain: list[str] = []
    spans: list[Span] = []
    position = 0
    last = 0
    for match in INLINE.finditer(paragraph):
        start, end = match.span()
        before = paragraph[last:start]
        if "*" in before or "`" in before:
            return None  # a delimiter that did not pair the simple way
        group = match.lastindex or 0
        inner = match.group(group)
        if group != 1:  # emphasis: the run must open and close (flanking), as CommonMark asks
            if paragraph[start - 1 : start] not in OPENS_AFTER or paragraph[end : end + 1] not in CLOSES_BEFORE:
                return None
            inner = _text(inner)
        for piece, style in ((_text(before), None), (inner, STYLE_OF_GROUP[group])):
            if style is not None:
                spans.append(Span(position, position + len(piece), style))
            plain.append(piece)
            position += len(piece)
        last = end
    rest = paragraph[last:]
    if "*" in rest or "`" in rest:
        return None
    plain.append(_text(rest))
    return Content("".join(plain), spans=spans)


def preview(text: str) -> tuple[Content, bool]:
    """The reply as Content, and whether it is exactly what Markdown would draw."""
    if not NOT_PLAIN.search(text):
        parts = [_inline(paragraph) for paragraph in _paragraphs(text)]
        if parts and all(part is not None for part in parts):
            return Content("\n\n").join(part for part in parts if part is not None), True
    return Content(text.strip()), False


# The styles preview's spans name (STYLE_OF_GROUP); Textual styles each of them on every restyle of the widget.
INLINE_CLASSES = {"em", "strong", "code_inline"}


def inline_css(widget: str) -> str:
    """The inline styles of Markdown's paragraphs, for a widget that draws :func:`preview`'s Content."""
    return f"""
    {widget} {{
        &:dark > .code_inline {{
            background: $warning 10%;
            color: $text-warning 95%;
        }}
        &:light > .code_inline {{
            background: $error 5%;
            color: $text-error 95%;
        }}
        &:ansi > .code_inline {{
            background: ansi_default !important;
        }}
        & > .em {{ text-style: italic; }}
        & > .strong {{ text-style: bold; }}
    }}
    """


class ReplyPreview(Static):
    """One widget for a reply that needs no Markdown blocks (see the module's docstring)."""

    COMPONENT_CLASSES = INLINE_CLASSES
    DEFAULT_CSS = """
    ReplyPreview {
        width: 1fr;
        height: auto;
        color: $foreground;
    }
    """ + inline_css("ReplyPreview")

    def __init__(self, text: str, *, classes: str = "") -> None:
        content, self.exact = preview(text)
        super().__init__(content, classes=classes, expand=True)
