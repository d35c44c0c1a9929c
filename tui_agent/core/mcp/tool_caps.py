"""What one MCP server may add to every request: a bounded number of tools and schema bytes.

Every tool's name, description and schema goes into every request of every turn; 600 tools made
each request 2.4 MB. ``cap_tools`` keeps the tools in the server's order while they fit, and says
in notes what it left out (shown in the sidebar and by ``mcp test``, and logged).
"""

from __future__ import annotations

import json
from typing import Any

MAX_TOOLS = 64  # per server
MAX_TOOL_BYTES = 16_384  # one tool's description and schema
MAX_SERVER_BYTES = 131_072  # all of a server's tools together


def tool_bytes(tool: Any) -> int:
    schema = json.dumps(tool.input_schema or {}, ensure_ascii=False, separators=(",", ":"))
    return len(schema.encode()) + len((tool.description or "").encode()) + len(str(tool.name).encode())


def cap_tools(tools: list[Any]) -> tuple[list[Any], list[str]]:
    """The tools that fit, and a note for each kind of thing left out."""
    kept: list[Any] = []
    large: list[str] = []
    over = 0
    total = 0
    for tool in tools:
        size = tool_bytes(tool)
        if size > MAX_TOOL_BYTES:
            large.append(f"{str(tool.name)[:60]} ({size:,} bytes)")
            continue
        if len(kept) >= MAX_TOOLS or total + size > MAX_SERVER_BYTES:
            over += 1
            continue
        kept.append(tool)
        total += size
    notes = []
    if large:
        notes.append(
            f"{len(large)} tool(s) left out, each over {MAX_TOOL_BYTES:,} bytes of schema: " + ", ".join(large[:5])
        )
    if over:
        notes.append(
            f"only {len(kept)} of {len(kept) + over} tools are offered to the model "
            f"(at most {MAX_TOOLS} tools and {MAX_SERVER_BYTES:,} bytes of schemas per server)"
        )
    return kept, notes
