"""generate_image: the single source of truth for image generation (seeds 000, 002, 003)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import secrets
import shutil
import signal
from pathlib import Path
from typing import Any

from tui_agent.core import media_files
from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.llm import LLMError, resolve_api_key
from tui_agent.core.store.errors import StoreError
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.command_guard import prompt_channel, prompt_reason, real_program_reason, template_reason
from tui_agent.core.tools.vault_paths import INVALID_PATH, MAX_NAME_BYTES, PathRejected, media_path, numbered

MAX_COUNT = 4
MAX_PARALLEL = 2
_PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|output|model)\}")


class GenerationError(Exception):
    pass


class GenerateImageTool(Tool):
    name = "generate_image"
    role = "image_tool"
    vision_followup = True
    description = (
        "Generate image(s) from a text prompt and store them in the vault. Path should use descriptive "
        "folders for uniqueness (e.g. 'diagrams/arch-v2.png', 'food/pepperoni-pizza.png'). Returns an "
        "error if the path already exists. The images are shown to the user automatically."
    )
    parameters = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "Text description of the image to generate."},
            "path": {
                "type": "string",
                "description": "Relative path within media/ (e.g. 'food/pizza.png'). Must end with .png. "
                "Intermediate directories are created automatically. With count > 1 the files are "
                "name-1.png, name-2.png, ...",
            },
            "count": {
                "type": "integer",
                "description": f"Number of images (default from the profile, usually 2; max {MAX_COUNT}).",
            },
            "reason": {"type": "string", "description": "Why this image helps the user (one short sentence)."},
        },
        "required": ["prompt", "path", "reason"],
    }

    def __init__(self) -> None:
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        # At most MAX_PARALLEL generations at once per event loop, across concurrent calls too.
        key = id(asyncio.get_running_loop())
        if key not in self._semaphores:
            self._semaphores[key] = asyncio.Semaphore(MAX_PARALLEL)
        return self._semaphores[key]

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"generate_image {arguments.get('path', '?')}: {arguments.get('prompt', '')}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        profile = ctx.profile
        try:
            target = media_path(ctx.vault, arguments["path"])
        except PathRejected as exc:
            return ToolResult.fail(str(exc))
        prompt = str(arguments["prompt"]).strip()
        if not prompt:
            return ToolResult.fail("missing parameter: prompt (it is empty)")
        requested = arguments.get("count")
        count = int(profile.images_per_request) if requested is None else int(requested)
        if count < 1:
            return ToolResult.fail(f"invalid count {count}: must be between 1 and {MAX_COUNT}")
        warning = ""
        if count > MAX_COUNT:
            warning = f"count {count} capped at {MAX_COUNT}"
            count = MAX_COUNT
        targets = numbered(target, count)
        if any(len(path.name.encode()) > MAX_NAME_BYTES for path in targets):
            return ToolResult.fail(f"{INVALID_PATH} (a file name is longer than {MAX_NAME_BYTES} bytes)")
        media = ctx.vault.media.resolve()
        for path in targets:
            relative = f"media/{path.relative_to(media).as_posix()}"
            try:
                # With PostgreSQL a path another machine took counts, even if not in this cache.
                if path.exists() or media_files.taken(ctx.vault.root, relative):
                    return ToolResult.fail(f"exists: {relative}")
            except StoreError as exc:
                return ToolResult.fail(f"cannot check {relative}: {exc}")
        try:
            backend = self._backend(ctx)
            backend.check_prompt(prompt)
        except GenerationError as exc:
            return ToolResult.fail(str(exc))
        ctx.logger.info("[IMAGE TOOL]\nSelected model: %s\nEndpoint: %s", profile.image_model, backend.endpoint)
        target.parent.mkdir(parents=True, exist_ok=True)
        claimed = _Claimed(ctx.vault.root, media)  # what this call made: the only pictures it may take back
        jobs = [asyncio.ensure_future(self._one(backend, prompt, path, claimed)) for path in targets]
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
                ctx.logger.error("image generation crashed", exc_info=first)
            return ToolResult.fail(str(first))
        paths = [f"media/{p.relative_to(media).as_posix()}" for p in targets]
        data: dict[str, Any] = {"paths": paths, "prompt": prompt, "model": profile.image_model, "count": count}
        if warning:
            data["warning"] = warning
        return ToolResult.ok(data, images=paths)

    def _backend(self, ctx: ToolContext) -> _Backend:
        profile = ctx.profile
        if profile.image_backend == "command":
            from tui_agent.core import trust

            withheld = trust.withheld("the image command is not run")
            if withheld is not None:
                raise GenerationError(withheld)
            argv = json.loads(profile.image_command)
            reason = template_reason(argv)  # checked when set, and again here: the row may predate the rule
            if reason is not None:
                raise GenerationError(f"profile field image_command {reason}")
            from tui_agent.core import approvals

            try:  # the gate: a command someone else stored runs only once approved on this machine
                approvals.require(approvals.command(profile.image_command, f"profile {profile.name}: image_command"))
            except approvals.NotApproved as exc:
                raise GenerationError(str(exc)) from None
            program = argv[0]
            found = shutil.which(program)
            if found is None:
                raise GenerationError(f"{Path(program).name} not found")
            if (reason := real_program_reason(found)) is not None:
                raise GenerationError(f"profile field image_command {reason}")
            return _CommandBackend(
                Path(program).name, [found, *argv[1:]], float(profile.image_timeout_s), profile.image_model
            )
        if profile.image_backend == "openai":
            base = (profile.image_base_url or profile.base_url).rstrip("/")
            try:
                key = resolve_api_key(profile, base, "image_base_url")
            except LLMError as exc:
                raise GenerationError(str(exc)) from None
            return _OpenAIBackend(
                f"{base}/images/generations", key, float(profile.image_timeout_s), profile.image_model
            )
        raise GenerationError(f"image_backend: unknown backend {profile.image_backend!r}")

    async def _one(self, backend: _Backend, prompt: str, target: Path, claimed: _Claimed) -> None:
        # A short temp name of our own: the final name may be up to 255 bytes long already.
        tmp = target.with_name(f".partial-{secrets.token_hex(8)}.png")
        async with self._semaphore():
            try:
                await backend.generate(prompt, tmp)
                try:
                    await asyncio.to_thread(verify_image, tmp, ("PNG",))
                except ImageCheckError as exc:
                    raise GenerationError(f"{backend.label} failed: output is not a valid PNG ({exc})") from None
                claimed.claim(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)


class _Backend:
    label = "image backend"
    endpoint = ""

    def check_prompt(self, prompt: str) -> None:
        """Raise GenerationError if this backend cannot pass ``prompt`` safely."""

    async def generate(self, prompt: str, output: Path) -> None:
        raise NotImplementedError


class _CommandBackend(_Backend):
    def __init__(self, label: str, argv: list[str], timeout_s: float, model: str) -> None:
        self.label = label
        self.argv = argv
        self.endpoint = argv[0]
        self.timeout_s = timeout_s
        self.model = model

    def check_prompt(self, prompt: str) -> None:
        reason = prompt_reason(self.argv, prompt)
        if reason is not None:
            raise GenerationError(reason)

    async def generate(self, prompt: str, output: Path) -> None:
        channel = prompt_channel(self.argv)
        prompt_file = _prompt_file(prompt) if channel == "file" else ""
        try:
            await self._run(prompt, output, channel, prompt_file)
        finally:
            if prompt_file:
                Path(prompt_file).unlink(missing_ok=True)

    async def _run(self, prompt: str, output: Path, channel: str, prompt_file: str) -> None:
        values = {"prompt": prompt, "prompt_file": prompt_file, "output": str(output), "model": self.model}
        # One pass, so a prompt that contains "{output}" stays text. The prompt is only ever a whole
        # argument (command_guard.template_reason), a file, or stdin.
        argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in self.argv]
        stdin_bytes = prompt.encode("utf-8") if channel == "stdin" else None
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin_bytes is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise GenerationError(f"{self.label} not found") from None
        except PermissionError:
            raise GenerationError(f"{self.label} failed: {argv[0]} is not executable") from None
        try:
            _, stderr = await asyncio.wait_for(process.communicate(stdin_bytes), timeout=self.timeout_s)
        except TimeoutError:
            await _kill_group(process)
            raise GenerationError(f"{self.label} timed out after {self.timeout_s:g}s") from None
        except asyncio.CancelledError:
            await _kill_group(process)
            raise
        if process.returncode != 0:
            text = stderr.decode("utf-8", "replace").strip()[-2000:] or f"exit status {process.returncode}"
            raise GenerationError(f"{self.label} failed: {text}")
        if not output.is_file():
            raise GenerationError(f"{self.label} failed: it exited without writing the image")


class _OpenAIBackend(_Backend):
    label = "images API"

    def __init__(self, url: str, api_key: str, timeout_s: float, model: str) -> None:
        self.endpoint = url
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.model = model

    async def generate(self, prompt: str, output: Path) -> None:
        import httpx2

        from tui_agent.core import tls

        body = {"model": self.model, "prompt": prompt, "n": 1, "response_format": "b64_json"}
        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            async with httpx2.AsyncClient(timeout=self.timeout_s, verify=tls.context()) as client:
                response = await client.post(self.endpoint, json=body, headers=headers)
        except httpx2.TimeoutException:
            raise GenerationError(f"images API timed out after {self.timeout_s:g}s") from None
        except httpx2.HTTPError as exc:
            raise GenerationError(f"images API unreachable at {self.endpoint}: {exc.__class__.__name__}") from None
        if response.status_code != 200:
            detail = _error_detail(response)
            if "polic" in detail.lower() or "safety" in detail.lower():
                raise GenerationError(
                    "the image service refused this prompt (content policy); try a different description"
                )
            raise GenerationError(f"images API failed ({response.status_code}): {detail}")
        try:
            b64 = response.json()["data"][0]["b64_json"]
            output.write_bytes(base64.b64decode(b64, validate=True))
        except (ValueError, KeyError, IndexError, TypeError):
            raise GenerationError("images API failed: the response has no b64_json image") from None


def _prompt_file(prompt: str) -> str:
    """A private temporary file (mode 0600) holding the prompt, for ``{prompt_file}``."""
    import tempfile

    handle, path = tempfile.mkstemp(prefix="tui-agent-prompt-", suffix=".txt")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(prompt)
    return path


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    await process.wait()


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


def _error_detail(response: Any) -> str:
    try:
        body = response.json()
        error = body.get("error")
        return str(error.get("message") if isinstance(error, dict) else error or body)[:300]
    except ValueError:
        return response.text[:300]
