"""An MCP server's tool as a registry tool: schema passed through, result in the standard shape."""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import time
from typing import Any

from tui_agent.core import media_files
from tui_agent.core.images import ImageCheckError, verify_image
from tui_agent.core.mcp.connection import McpCallError, ServerConnection
from tui_agent.core.store.errors import StoreError
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.vault import Vault

MAX_RESULT_CHARS = 20_000
MAX_IMAGE_BYTES = 20_000_000
OPENAI_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def tool_name(server: str, tool: str, namespaced: bool) -> str:
    """A function name the OpenAI API accepts (``^[A-Za-z0-9_-]{1,64}$``)."""
    raw = f"{server}__{tool}" if namespaced else tool
    return OPENAI_NAME_RE.sub("_", raw)[:64] or "tool"


def approval_question(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """The one place the approval question for an MCP call is written: every argument, whole (the
    dialog scrolls; it makes invisible and bidi characters visible)."""
    shown = json.dumps(arguments, ensure_ascii=False, indent=2)
    return f"Run tool {tool!r} of MCP server {server!r} with these arguments?\n{shown}"


class McpTool(Tool):
    role = "mcp_tool"
    vision_followup = True  # only when the result holds images (the loop checks result.images)
    strict_schema = False  # the server checks arguments against its own schema

    def __init__(self, connection: ServerConnection, remote: Any, name: str, timeout_s: float) -> None:
        self.connection = connection
        self.remote_name: str = remote.name
        self.name = name  # type: ignore[misc]
        server = connection.name
        summary = (remote.description or remote.title or remote.name).strip()
        self.description = f"[MCP server {server}] {summary}"[:1024]  # type: ignore[misc]
        schema = dict(remote.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.parameters = schema  # type: ignore[misc]
        self.timeout_s = timeout_s

    @property
    def server(self) -> str:
        return self.connection.name

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"{self.server}: {self.remote_name} {json.dumps(arguments, ensure_ascii=False)}"[:300]

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        config = self.connection.config
        if config.policy_for(self.remote_name) != "auto":
            question = approval_question(self.server, self.remote_name, arguments)
            approved = await ctx.approve(self.name, question) if ctx.approve is not None else False
            if not approved:
                return ToolResult.fail(
                    f"not run: the user did not approve {self.remote_name} on MCP server {self.server} "
                    "(headless: tui-agent ask --yes; or set the policy to auto)"
                )
        timeout = float(config.timeout_s or self.timeout_s)
        try:
            result = await self.connection.call(self.remote_name, arguments, timeout)
        except McpCallError as exc:
            return ToolResult.fail(str(exc))
        return convert_result(ctx.vault, self.server, self.remote_name, result)


def convert_result(vault: Vault, server: str, tool: str, result: Any) -> ToolResult:
    """Text blocks become the result text, images are saved under ``media/mcp/``, errors stay errors."""
    texts: list[str] = []
    images: list[str] = []
    notes: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            try:
                images.append(_save_image(vault, server, tool, block.data, block.mime_type))
            except ValueError as exc:
                notes.append(f"an image could not be kept: {exc}")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            texts.append(text if text is not None else f"[binary resource {resource.uri}]")
        elif kind == "resource_link":
            texts.append(f"[resource {block.uri}{': ' + block.description if block.description else ''}]")
        else:
            notes.append(f"{kind or 'unknown'} content was left out")
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(texts)
    if len(text) > MAX_RESULT_CHARS:
        notes.append(f"output truncated: showing {MAX_RESULT_CHARS:,} of {len(text):,} characters")
        text = text[:MAX_RESULT_CHARS]
    if result.is_error:
        return ToolResult.fail(f"{tool} on MCP server {server} failed: {text or 'no details given'}")
    data: dict[str, Any] = {"content": text}
    if images:
        data["images"] = images
    if notes:
        data["note"] = "; ".join(notes)
    return ToolResult.ok(data, images=images)


def _save_image(vault: Vault, server: str, tool: str, data: str, mime: str) -> str:
    if len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ValueError("larger than 20 MB")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the image data is not valid base64") from None
    extension = _EXTENSIONS.get((mime or "").lower())
    if extension is None:
        raise ValueError(f"unsupported image type {mime!r}")
    folder = vault.media / "mcp" / _safe(server)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"{_safe(tool)}-{stamp}-{secrets.token_hex(3)}.{extension}"
    partial = target.with_name(f".{target.name}.partial")
    partial.write_bytes(raw)
    try:
        verify_image(partial)
    except ImageCheckError as exc:
        partial.unlink(missing_ok=True)
        raise ValueError(str(exc)) from None
    partial.replace(target)
    relative = vault.relative(target)
    try:
        media_files.keep(vault.root, relative, raw, mime.lower())  # PostgreSQL: other machines show it too
    except StoreError as exc:
        target.unlink(missing_ok=True)
        raise ValueError(f"it could not be stored: {exc}") from None
    return relative


def _safe(name: str) -> str:
    """Folder and file names under media/ follow the vault path rules: letters, digits, - and _."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", name).strip("-_") or "tool"
    return cleaned if cleaned[0].isalnum() else f"x{cleaned}"
