"""edit_image: a new picture from one the conversation holds and a prompt ("make it bluer").

Everything after the source is generate_image's (image_run, image_backends): the same target
rules and ``exists:`` error, the same backends (``/images/edits`` or the command's ``{input}``),
the same result, shown, then seen by the vision model. The source is never written to: the new
picture needs a name that does not exist yet, and the command backend gets a copy of the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_agent.core import media_files
from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.store import worker
from tui_agent.core.store.held_pictures import held_pictures
from tui_agent.core.tools.base import ToolContext, ToolResult
from tui_agent.core.tools.image_backends import GenerationError, ImageBackend, Picture, backend_for
from tui_agent.core.tools.image_run import (
    MAX_COUNT,
    PATH_PARAMETER,
    REASON_PARAMETER,
    PictureTool,
    log_selection,
    result_data,
    vault_name,
)
from tui_agent.core.tools.vault_paths import SHOW_RE, PathRejected, media_path

INVALID_SOURCE = "invalid image: must be a vault picture under media/ (png, jpg, gif or webp), relative, no '..'"
INVALID_MASK = "invalid mask: must be a PNG under media/, relative, no '..'"


class EditImageTool(PictureTool):
    name = "edit_image"
    description = (
        "Edit a picture this conversation holds (one generated, shown or attached earlier) following a "
        "prompt, e.g. 'make it bluer', 'remove the hat', and store the result as a NEW picture in the "
        "vault (the source is kept). Returns an error if the new path already exists. The result is "
        "shown to the user automatically, and you see it afterwards."
    )
    parameters = {
        "type": "object",
        "properties": {
            "image": {
                "type": "string",
                "description": "The picture to edit: its path under media/ as the conversation shows it, "
                "e.g. 'media/animals/red-fox.png' or 'media/uploads/photo.jpg'.",
            },
            "prompt": {
                "type": "string",
                "description": "What to change, or the whole desired picture, in words (e.g. 'the same fox, "
                "bluer sky').",
            },
            "path": PATH_PARAMETER,
            "mask": {
                "type": "string",
                "description": "Optional PNG under media/ whose fully transparent areas mark where to edit "
                "(same size as the image). Leave out to let the model edit the whole picture.",
            },
            "count": {"type": "integer", "description": f"Number of edited pictures (default 1; max {MAX_COUNT})."},
            "reason": REASON_PARAMETER,
        },
        "required": ["image", "prompt", "path", "reason"],
    }

    def summarize(self, arguments: dict[str, Any]) -> str:
        return (
            f"edit_image {arguments.get('image', '?')} -> {arguments.get('path', '?')}: {arguments.get('prompt', '')}"
        )

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        held = None
        if ctx.conversation_id is not None:  # from the shell (`tui-agent tool`) the user names any picture
            held = await worker.run(held_pictures, ctx.conversation_id)
        try:
            source = _picture(ctx, arguments["image"], INVALID_SOURCE, held)
            mask = None
            if arguments.get("mask"):
                mask = _picture(ctx, arguments["mask"], INVALID_MASK, held)
                if mask.format != "PNG":
                    raise GenerationError(f"{INVALID_MASK} ({vault_name(ctx, mask.path)} is {mask.format})")
            plan = self.plan(arguments, ctx, 1)
            backend = backend_for(ctx, edit=True)
            if (reason := backend.edit_reason(mask is not None)) is not None:
                raise GenerationError(reason)
            backend.check_prompt(plan.prompt)
        except GenerationError as exc:
            return ToolResult.fail(str(exc))
        source_name = vault_name(ctx, source.path)
        log_selection(ctx, backend, source_name)

        async def make(backend: ImageBackend, output: Path) -> None:
            await backend.edit(plan.prompt, source, mask, output)

        try:
            paths = await self.make_all(ctx, backend, plan.targets, make)
        except GenerationError as exc:
            return ToolResult.fail(str(exc))
        return result_data(plan, paths, ctx.profile.image_model, source=source_name)


NOT_HELD = "edit one it generated, showed or attached, or ask the user to name it (/edit media/... words)"


def _picture(ctx: ToolContext, raw: Any, invalid: str, held: set[str] | None) -> Picture:
    """A vault picture by its ``media/...`` name (seed 000's rules), one the conversation holds
    (``held``; None: any), fetched from the database when another machine made it; GenerationError
    when it is not one."""
    try:
        path = media_path(ctx.vault, raw, SHOW_RE, invalid)
    except PathRejected as exc:
        raise GenerationError(str(exc)) from None
    relative = vault_name(ctx, path)
    if held is not None and relative not in held:
        # Another conversation's picture is out of reach of this one's model (words read from a page
        # or a file cannot send it anywhere); the user brings it in by naming it (/edit media/...).
        raise GenerationError(f"{relative} is not a picture of this conversation: {NOT_HELD}")
    try:
        local = media_files.local_file(ctx.vault.root, relative)
    except media_files.MediaUnavailable as exc:
        raise GenerationError(f"not found: {relative}" if exc.missing else f"{relative}: {exc}") from None
    try:
        fmt, _width, _height = verify_image(local)
    except ImageCheckError as exc:
        raise GenerationError(f"{relative} is not a picture that can be edited ({exc})") from None
    return Picture(local.resolve(), fmt)
