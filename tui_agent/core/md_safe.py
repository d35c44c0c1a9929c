"""Stored text written into an exported Markdown file stays text.

A reply is Markdown and stays Markdown (emphasis, lists, code), but raw HTML in it is escaped
(``</details><script>`` would close the export's own collapsible blocks and run in a viewer that
renders HTML), and control characters are made visible. Code (fenced and indented blocks, found
by the same parser that renders Markdown, and inline code spans) keeps its ``<`` as it is: there
it is already text. Where a span's reading is doubtful, the text is escaped: too much escaping
only shows ``&lt;`` literally, too little would run.
"""

from __future__ import annotations

import html
import re

from tui_agent.core.textsafe import visible

# An inline code span: a whole run of backticks (not escaped), up to the next run of the same
# length, within one paragraph (no blank line).
_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)


def text(value: str) -> str:
    """Plain text for a heading, a summary or a note: no HTML, no control characters."""
    return visible(html.escape(value, quote=False))


def markdown(value: str) -> str:
    """Markdown kept as Markdown, with raw HTML outside code escaped and controls made visible."""
    value = visible(value)
    if "<" not in value and ">" not in value and "&" not in value:
        return value
    lines = value.split("\n")
    code = _code_lines(value)
    out: list[str] = []
    chunk: list[str] = []
    for number, line in enumerate(lines):
        if number in code:
            if chunk:
                out.append(_escape_outside_spans("\n".join(chunk)))
                chunk = []
            out.append(line)
        else:
            chunk.append(line)
    if chunk:
        out.append(_escape_outside_spans("\n".join(chunk)))
    return "\n".join(out)


def _code_lines(value: str) -> set[int]:
    from markdown_it import MarkdownIt  # the parser Textual renders Markdown with

    lines: set[int] = set()
    for token in MarkdownIt("commonmark").parse(value):
        if token.type in ("fence", "code_block") and token.map:
            start, end = token.map
            lines.update(range(start, end))
    return lines


def _escape_outside_spans(chunk: str) -> str:
    out: list[str] = []
    last = 0
    for match in _SPAN.finditer(chunk):
        out.append(html.escape(chunk[last : match.start()], quote=False))
        out.append(match.group(0))
        last = match.end()
    out.append(html.escape(chunk[last:], quote=False))
    return "".join(out)
