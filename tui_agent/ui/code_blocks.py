"""Fenced code blocks of a Markdown message, for "copy code block"."""

from __future__ import annotations

from dataclasses import dataclass

from tui_agent.core.textsafe import visible


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str

    @property
    def label(self) -> str:
        lines = self.code.count("\n") + (0 if self.code.endswith("\n") or not self.code else 1)
        first = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        preview = first[:40] + ("…" if len(first) > 40 else "")
        # The info string and the code are the model's: shown, never acted on by the terminal.
        return visible(f"{self.language[:20] or 'text'}, {lines} line{'s' if lines != 1 else ''}: {preview}")


def code_blocks(markdown: str) -> list[CodeBlock]:
    """Every fenced (and indented) code block, in order, parsed the way the chat renders it."""
    from markdown_it import MarkdownIt  # textual's own Markdown parser

    tokens = MarkdownIt("commonmark").parse(markdown)
    return [
        CodeBlock(token.info.strip().split(" ")[0] if token.info else "", token.content)
        for token in tokens
        if token.type in ("fence", "code_block")
    ]
