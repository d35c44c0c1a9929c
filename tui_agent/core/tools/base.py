"""The tool interface: name, typed JSON schema, role, async execute returning the standard result."""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from tui_agent.core.store.models import Profile
from tui_agent.core.vault import Vault

ApprovalCallback = Callable[[str, str], Awaitable[bool]]
"""Asks the user to approve an action: (tool name, human-readable description) -> yes?"""


class ToolResult:
    """``{"status":"ok","data":{...}}`` or ``{"status":"error","error":"..."}``.

    ``images`` lists vault-relative image paths the result produced; they are stored as
    attachments of the tool message and shown to the vision model in the follow-up.
    (Plain classes here, not dataclasses: see core.events.)
    """

    __slots__ = ("data", "error", "images", "status")

    def __init__(
        self, status: str, data: dict[str, Any] | None = None, error: str = "", images: list[str] | None = None
    ) -> None:
        self.status = status
        self.data: dict[str, Any] = {} if data is None else data
        self.error = error
        self.images: list[str] = [] if images is None else images

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return (self.status, self.data, self.error, self.images) == (
            other.status,
            other.data,
            other.error,
            other.images,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return f"ToolResult(status={self.status!r}, data={self.data!r}, error={self.error!r}, images={self.images!r})"

    @classmethod
    def ok(cls, data: dict[str, Any] | None = None, images: list[str] | None = None) -> ToolResult:
        return cls("ok", data or {}, "", list(images or []))

    @classmethod
    def fail(cls, error: str) -> ToolResult:
        return cls("error", {}, error)

    @property
    def is_ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        if self.is_ok:
            return {"status": "ok", "data": self.data}
        return {"status": "error", "error": self.error}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


class ToolContext:
    """What a tool may use: the vault, the profile, a way to ask the user, and the conversation the
    call belongs to (None from the shell: ``tui-agent tool``)."""

    def __init__(
        self,
        vault: Vault,
        profile: Profile,
        approve: ApprovalCallback | None = None,
        logger: logging.Logger | None = None,
        conversation_id: int | None = None,
    ) -> None:
        self.vault = vault
        self.profile = profile
        self.approve = approve
        self.logger = logger or logging.getLogger("tui_agent.tools")
        self.conversation_id = conversation_id


class Tool(ABC):
    """Base class of every tool. Subclasses set the class attributes and implement ``execute``."""

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    role: ClassVar[str]
    #: After this tool runs, the next request uses the profile's vision model.
    vision_followup: ClassVar[bool] = False
    #: False for tools whose schema comes from elsewhere (MCP servers check their own arguments).
    strict_schema: ClassVar[bool] = True

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def summarize(self, arguments: dict[str, Any]) -> str:
        """A one-line human-readable form of a call (used in the UI and on stderr)."""
        return f"{self.name} {json.dumps(arguments, ensure_ascii=False)}"

    @abstractmethod
    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the tool. Expected failures return ``ToolResult.fail``; never raise for bad input."""
