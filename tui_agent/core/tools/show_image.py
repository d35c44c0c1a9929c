"""show_image (seed 000's ``draw``): show an existing vault image in the chat."""

from __future__ import annotations

from typing import Any

from tui_agent.core import media_files
from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.vault_paths import SHOW_RE, PathRejected, media_path

INVALID = "invalid path: must be a vault image under media/ (png, jpg, gif or webp), relative, no '..'"


class ShowImageTool(Tool):
    name = "show_image"
    role = "show_tool"
    description = (
        "Show an existing image from the user's vault in the chat. Images made by generate_image are "
        "shown automatically; use this for earlier images or uploads."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Path under media/, e.g. 'media/food/pizza.png' or 'food/pizza.png'.",
            },
        },
        "required": ["path"],
    }

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            target = media_path(ctx.vault, arguments["path"], SHOW_RE, INVALID)
        except PathRejected as exc:
            return ToolResult.fail(str(exc))
        relative = "media/" + target.relative_to(ctx.vault.media.resolve()).as_posix()
        try:
            target = media_files.local_file(ctx.vault.root, relative)  # made on another machine: fetched
        except media_files.MediaUnavailable as exc:
            return ToolResult.fail(f"not found: {relative}" if exc.missing else str(exc))
        try:
            fmt, width, height = verify_image(target)
        except ImageCheckError as exc:
            return ToolResult.fail(f"{relative}: {exc}")
        return ToolResult.ok({"path": relative, "format": fmt, "width": width, "height": height}, images=[relative])
