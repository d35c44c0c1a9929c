"""generate_image: the single source of truth for image generation (seeds 000, 002, 003).

The backends (image_backends) and the way from a target path to stored pictures (image_run) are
shared with edit_image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_agent.core.tools.base import ToolContext, ToolResult
from tui_agent.core.tools.image_backends import GenerationError, ImageBackend, backend_for
from tui_agent.core.tools.image_run import (
    MAX_COUNT,
    PATH_PARAMETER,
    REASON_PARAMETER,
    PictureTool,
    log_selection,
    result_data,
)


class GenerateImageTool(PictureTool):
    name = "generate_image"
    description = (
        "Generate image(s) from a text prompt and store them in the vault. Path should use descriptive "
        "folders for uniqueness (e.g. 'diagrams/arch-v2.png', 'food/pepperoni-pizza.png'). Returns an "
        "error if the path already exists. The images are shown to the user automatically."
    )
    parameters = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "Text description of the image to generate."},
            "path": PATH_PARAMETER,
            "count": {
                "type": "integer",
                "description": f"Number of images (default from the profile, usually 2; max {MAX_COUNT}).",
            },
            "reason": REASON_PARAMETER,
        },
        "required": ["prompt", "path", "reason"],
    }

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"generate_image {arguments.get('path', '?')}: {arguments.get('prompt', '')}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            plan = self.plan(arguments, ctx, int(ctx.profile.images_per_request))
            backend = backend_for(ctx)
            backend.check_prompt(plan.prompt)
        except GenerationError as exc:
            return ToolResult.fail(str(exc))
        log_selection(ctx, backend)

        async def make(backend: ImageBackend, output: Path) -> None:
            await backend.generate(plan.prompt, output)

        try:
            paths = await self.make_all(ctx, backend, plan.targets, make)
        except GenerationError as exc:
            return ToolResult.fail(str(exc))
        return result_data(plan, paths, ctx.profile.image_model)
