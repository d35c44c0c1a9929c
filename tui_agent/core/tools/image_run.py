"""What generate_image and edit_image share from the target path to the stored pictures (seed 000's
path rules and error table, seed 003's count rules): the targets checked before anything runs,
at most MAX_PARALLEL pictures made at once, each written to a temp file, checked, then claimed
under its name; all or nothing, so a failure or a cancel leaves no partial file."""

from __future__ import annotations

import asyncio
import os
import secrets
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tui_agent.core import media_files
from tui_agent.core.images import ImageCheckError, to_png, verify_image
from tui_agent.core.store.errors import StoreError
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.image_backends import GenerationError, ImageBackend
from tui_agent.core.tools.vault_paths import INVALID_PATH, MAX_NAME_BYTES, PathRejected, media_path, numbered

MAX_COUNT = 4
MAX_PARALLEL = 2
ANSWERED_FORMATS = ("PNG", "JPEG", "WEBP")  # what a generator may answer (saved as PNG)
# At most MAX_PARALLEL pictures at once per event loop, across both tools and concurrent calls.
_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()

PATH_PARAMETER = {
    "type": "string",
    "description": "Relative path within media/ for the new picture (e.g. 'food/pizza.png'). Must end with "
    ".png. Intermediate directories are created automatically. With count > 1 the files are "
    "name-1.png, name-2.png, ...",
}
REASON_PARAMETER = {"type": "string", "description": "Why this image helps the user (one short sentence)."}

Make = Callable[[ImageBackend, Path], Awaitable[None]]
"""Makes one picture with the backend into the given (temporary) file."""


class Plan:
    """The checked request: the pictures to make, and a warning for the model (count capped)."""

    __slots__ = ("count", "prompt", "targets", "warning")

    def __init__(self, prompt: str, targets: list[Path], count: int, warning: str) -> None:
        self.prompt = prompt
        self.targets = targets
        self.count = count
        self.warning = warning


class PictureTool(Tool):
    """Base of the tools that make pictures into ``media/``: the result is shown and the next
    request goes to the vision model with it."""

    role = "image_tool"
    vision_followup = True

    def plan(self, arguments: dict[str, Any], ctx: ToolContext, default_count: int) -> Plan:
        """Check the prompt, the count and every target before anything runs (GenerationError)."""
        try:
            target = media_path(ctx.vault, arguments["path"])
        except PathRejected as exc:
            raise GenerationError(str(exc)) from None
        prompt = str(arguments["prompt"]).strip()
        if not prompt:
            raise GenerationError("missing parameter: prompt (it is empty)")
        requested = arguments.get("count")
        count = default_count if requested is None else int(requested)
        if count < 1:
            raise GenerationError(f"invalid count {count}: must be between 1 and {MAX_COUNT}")
        warning = ""
        if count > MAX_COUNT:
            warning = f"count {count} capped at {MAX_COUNT}"
            count = MAX_COUNT
        targets = numbered(target, count)
        if any(len(path.name.encode()) > MAX_NAME_BYTES for path in targets):
            raise GenerationError(f"{INVALID_PATH} (a file name is longer than {MAX_NAME_BYTES} bytes)")
        for path in targets:
            relative = vault_name(ctx, path)
            try:
                # With PostgreSQL a path another machine took counts, even if not in this cache.
                if path.exists() or media_files.taken(ctx.vault.root, relative):
                    raise GenerationError(f"exists: {relative}")
            except StoreError as exc:
                raise GenerationError(f"cannot check {relative}: {exc}") from None
        return Plan(prompt, targets, count, warning)

    async def make_all(self, ctx: ToolContext, backend: ImageBackend, targets: list[Path], make: Make) -> list[str]:
        """Make every target (all or nothing); their ``media/...`` names. Raises GenerationError."""
        media = ctx.vault.media.resolve()
        targets[0].parent.mkdir(parents=True, exist_ok=True)
        claimed = _Claimed(ctx.vault.root, media)  # what this call made: the only pictures it may take back
        jobs = [asyncio.ensure_future(self._one(backend, path, claimed, make)) for path in targets]
        try:
            results = await asyncio.gather(*jobs, return_exceptions=True)
        except asyncio.CancelledError:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
            claimed.take_back()
            raise
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            claimed.take_back()  # all or nothing: no partial set is left behind, and nobody else's file goes
            first = errors[0]
            if not isinstance(first, GenerationError):
                ctx.logger.error("image tool crashed", exc_info=first)
            raise GenerationError(str(first))
        return [vault_name(ctx, p) for p in targets]

    async def _one(self, backend: ImageBackend, target: Path, claimed: _Claimed, make: Make) -> None:
        # A short temp name of our own: the final name may be up to 255 bytes long already.
        tmp = target.with_name(f".partial-{secrets.token_hex(8)}.png")
        async with _semaphore():
            try:
                await make(backend, tmp)
                try:
                    # gpt-image models answer JPEG or WebP when asked (output_format): kept as a PNG,
                    # the name the model gave ends in .png.
                    kind, _, _ = await asyncio.to_thread(verify_image, tmp, ANSWERED_FORMATS)
                    if kind != "PNG":
                        await asyncio.to_thread(to_png, tmp)
                except (ImageCheckError, OSError) as exc:
                    raise GenerationError(
                        f"{backend.label} failed: output is not a valid PNG, JPEG or WebP picture ({exc})"
                    ) from None
                claimed.claim(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)


def log_selection(ctx: ToolContext, backend: ImageBackend, source: str = "") -> None:
    """The ``[IMAGE TOOL]`` lines (seed 002): the model, the endpoint, and for an edit its source."""
    lines = f"[IMAGE TOOL]\nSelected model: {ctx.profile.image_model}\nEndpoint: {backend.endpoint}"
    ctx.logger.info("%s%s", lines, f"\nSource: {source}" if source else "")


def vault_name(ctx: ToolContext, path: Path) -> str:
    return f"media/{path.relative_to(ctx.vault.media.resolve()).as_posix()}"


def result_data(plan: Plan, paths: list[str], model: str, **extra: Any) -> ToolResult:
    data: dict[str, Any] = {"paths": paths, **extra, "prompt": plan.prompt, "model": model, "count": plan.count}
    if plan.warning:
        data["warning"] = plan.warning
    return ToolResult.ok(data, images=paths)


def _semaphore() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    if loop not in _SEMAPHORES:
        _SEMAPHORES[loop] = asyncio.Semaphore(MAX_PARALLEL)
    return _SEMAPHORES[loop]


class _Claimed:
    """The pictures one call made: each name claimed in this vault's ``media/`` and, with a store
    that keeps pictures (PostgreSQL), in the database, where another machine may have taken it."""

    def __init__(self, vault_root: Path, media: Path) -> None:
        self.vault_root = vault_root
        self.media = media
        self.files: list[Path] = []
        self.stored: list[tuple[str, bytes]] = []

    def claim(self, tmp: Path, target: Path) -> None:
        relative = f"media/{target.relative_to(self.media).as_posix()}"
        if not _claim(tmp, target):
            raise GenerationError(f"exists: {relative} (another generation made it first)")
        self.files.append(target)
        data = target.read_bytes()
        try:
            kept = media_files.keep(self.vault_root, relative, data, "image/png")
        except StoreError as exc:
            raise GenerationError(f"{relative} could not be stored: {exc}") from None
        if not kept:
            raise GenerationError(f"exists: {relative} (another generation made it first)")
        self.stored.append((relative, data))

    def take_back(self) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)
        for relative, data in self.stored:
            media_files.unkeep(self.vault_root, relative, data)


def _claim(tmp: Path, target: Path) -> bool:
    """Give ``tmp`` the name ``target`` unless that name exists (atomically); False if it does."""
    try:
        os.link(tmp, target)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass  # a file system without hard links: claim the name by creating it exclusively
    try:
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    os.replace(tmp, target)
    return True
