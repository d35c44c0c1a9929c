"""The image backends generate_image and edit_image share: the command (``image_command``, run
without a shell) and an OpenAI-compatible images API (``/images/generations``, ``/images/edits``).

:func:`backend_for` is the one place a backend is chosen and built from the profile: whatever
must hold before a program runs or a URL is called (trust, the template's rules) is checked there.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from tui_agent.core.llm import LLMError, resolve_api_key
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.command_guard import (
    INPUT,
    MASK,
    prompt_channel,
    prompt_reason,
    real_program_reason,
    template_reason,
)

_PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|output|model|input|mask)\}")
_PICTURE_PLACEHOLDERS = (INPUT, MASK)  # left out with the option before them when there is no such picture
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a picture the images API answers with a URL
_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class GenerationError(Exception):
    """One line for the model: why no picture was made."""


class Picture:
    """A picture sent to an edit: its file and its format (as ``verify_image`` found it)."""

    __slots__ = ("format", "path")

    def __init__(self, path: Path, format: str) -> None:
        self.path = path
        self.format = format

    @property
    def mime(self) -> str:
        return _MIME.get(self.format, "application/octet-stream")


class ImageBackend:
    label = "image backend"
    endpoint = ""

    def check_prompt(self, prompt: str) -> None:
        """Raise GenerationError if this backend cannot pass ``prompt`` safely."""

    def edit_reason(self, mask: bool) -> str | None:
        """Why this backend cannot edit a picture (None: it can)."""
        return None

    async def generate(self, prompt: str, output: Path) -> None:
        raise NotImplementedError

    async def edit(self, prompt: str, source: Picture, mask: Picture | None, output: Path) -> None:
        raise NotImplementedError


def backend_for(ctx: ToolContext, *, edit: bool = False) -> ImageBackend:
    """The profile's image backend, ready to run (``edit``: its endpoint is the one for edits).
    Raises GenerationError with one line naming what is wrong."""
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
        return CommandBackend(
            Path(program).name, [found, *argv[1:]], float(profile.image_timeout_s), profile.image_model
        )
    if profile.image_backend == "openai":
        base = (profile.image_base_url or profile.base_url).rstrip("/")
        try:
            key = resolve_api_key(profile, base, "image_base_url")
        except LLMError as exc:
            raise GenerationError(str(exc)) from None
        url = f"{base}/images/edits" if edit else f"{base}/images/generations"
        return OpenAIBackend(url, key, float(profile.image_timeout_s), profile.image_model)
    raise GenerationError(f"image_backend: unknown backend {profile.image_backend!r}")


class CommandBackend(ImageBackend):
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

    def edit_reason(self, mask: bool) -> str | None:
        if not any(INPUT in arg for arg in self.argv):
            return (
                f"{self.label} cannot edit pictures: image_command has no {INPUT} placeholder (add one where "
                "the program takes the source picture, or use image_backend openai with a server that edits)"
            )
        if mask and not any(MASK in arg for arg in self.argv):
            return f"{self.label} cannot use a mask: image_command has no {MASK} placeholder (edit without a mask)"
        return None

    async def generate(self, prompt: str, output: Path) -> None:
        await self._prompted(prompt, output, {})

    async def edit(self, prompt: str, source: Picture, mask: Picture | None, output: Path) -> None:
        # The program gets copies: whatever it does with its input, the vault's picture stays as it was.
        with tempfile.TemporaryDirectory(prefix="tui-agent-edit-") as folder:
            pictures = {"input": _copy(source.path, Path(folder) / f"input{source.path.suffix}")}
            if mask is not None:
                pictures["mask"] = _copy(mask.path, Path(folder) / f"mask{mask.path.suffix}")
            await self._prompted(prompt, output, pictures)

    async def _prompted(self, prompt: str, output: Path, pictures: dict[str, str]) -> None:
        channel = prompt_channel(self.argv)
        prompt_file = _prompt_file(prompt) if channel == "file" else ""
        try:
            await self._run(prompt, output, channel, prompt_file, pictures)
        finally:
            if prompt_file:
                Path(prompt_file).unlink(missing_ok=True)

    async def _run(self, prompt: str, output: Path, channel: str, prompt_file: str, pictures: dict[str, str]) -> None:
        values = {"prompt": prompt, "prompt_file": prompt_file, "output": str(output), "model": self.model, **pictures}
        # One pass, so a prompt that contains "{output}" stays text. The prompt is only ever a whole
        # argument (command_guard.template_reason), a file, or stdin.
        argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in without_missing(self.argv, pictures)]
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
            async with asyncio.timeout(self.timeout_s):
                _, stderr = await process.communicate(stdin_bytes)
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


def without_missing(argv: list[str], pictures: dict[str, str]) -> list[str]:
    """The template without the words of a picture this run has not got ({input} when generating,
    {mask} without a mask), nor the option just before such a word (``--image-path {input}``):
    one template serves generation and edits."""
    kept: list[str] = []
    for arg in argv:
        missing = [p for p in _PICTURE_PLACEHOLDERS if p in arg and p[1:-1] not in pictures]
        if not missing:
            kept.append(arg)
            continue
        if arg in _PICTURE_PLACEHOLDERS and kept and kept[-1].startswith("-") and "{" not in kept[-1]:
            kept.pop()
    return kept


class OpenAIBackend(ImageBackend):
    label = "images API"

    def __init__(self, url: str, api_key: str, timeout_s: float, model: str) -> None:
        self.endpoint = url
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.model = model

    async def generate(self, prompt: str, output: Path) -> None:
        body = {"model": self.model, "prompt": prompt, "n": 1, "response_format": "b64_json"}
        await self._post(output, json=body)

    async def edit(self, prompt: str, source: Picture, mask: Picture | None, output: Path) -> None:
        # Multipart as OpenAI's API takes it (openai-python's images.edit): the pictures as files,
        # the rest as fields. No response_format: gpt-image models refuse it and answer b64_json;
        # others may answer a URL, which is read below.
        files: dict[str, tuple[str, bytes, str]] = {"image": _upload(source)}
        if mask is not None:
            files["mask"] = _upload(mask)
        await self._post(output, data={"prompt": prompt, "model": self.model, "n": "1"}, files=files)

    async def _post(self, output: Path, **request: Any) -> None:
        import httpx2

        from tui_agent.core import tls

        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            async with httpx2.AsyncClient(timeout=self.timeout_s, verify=tls.context()) as client:
                response = await client.post(self.endpoint, headers=headers, **request)
        except httpx2.TimeoutException:
            raise GenerationError(f"images API timed out after {self.timeout_s:g}s") from None
        except httpx2.HTTPError as exc:
            raise GenerationError(f"images API unreachable at {self.endpoint}: {exc.__class__.__name__}") from None
        if response.status_code in (404, 405) and self.endpoint.endswith("/images/edits"):
            raise GenerationError(
                f"images API cannot edit pictures: {self.endpoint} answered {response.status_code} (this server "
                "has no /images/edits; use one that implements it, such as OpenAI's with gpt-image-1)"
            )
        if response.status_code != 200:
            detail = error_detail(response)
            if "polic" in detail.lower() or "safety" in detail.lower():
                raise GenerationError(
                    "the image service refused this prompt (content policy); try a different description"
                )
            raise GenerationError(f"images API failed ({response.status_code}): {detail}")
        await self._save(response, output)

    async def _save(self, response: Any, output: Path) -> None:
        try:
            first = response.json()["data"][0]
            b64, url = first.get("b64_json"), first.get("url")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            b64 = url = None
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            b64 = url.split(";base64,", 1)[1]  # some local servers answer a data: URL for "url"
        if isinstance(b64, str) and b64:
            try:
                output.write_bytes(base64.b64decode(b64, validate=True))
                return
            except ValueError:
                raise GenerationError("images API failed: the response's b64_json is not base64") from None
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            from tui_agent.core.download import DownloadError, download

            try:
                with output.open("wb") as out:
                    await download(
                        url,
                        out,
                        max_bytes=MAX_ANSWER_BYTES,
                        read_timeout_s=self.timeout_s,
                        deadline_s=self.timeout_s,
                        accept="image/*",
                    )
            except DownloadError as exc:
                raise GenerationError(f"images API failed: the picture it named {exc}") from None
            return
        raise GenerationError("images API failed: the response has no b64_json image and no url")


def _upload(picture: Picture) -> tuple[str, bytes, str]:
    return (picture.path.name, picture.path.read_bytes(), picture.mime)


def _copy(source: Path, target: Path) -> str:
    shutil.copyfile(source, target)
    return str(target)


def _prompt_file(prompt: str) -> str:
    """A private temporary file (mode 0600) holding the prompt, for ``{prompt_file}``."""
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


def error_detail(response: Any) -> str:
    try:
        body = response.json()
        error = body.get("error")
        return str(error.get("message") if isinstance(error, dict) else error or body)[:300]
    except ValueError:
        return response.text[:300]
    except AttributeError:
        return str(response.text)[:300]
