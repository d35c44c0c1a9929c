"""Typed events of the unified loop, consumed alike by the TUI and ``tui-agent ask``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui_agent.core.tools.base import ToolResult


@dataclass(frozen=True)
class TurnStarted:
    conversation_id: int
    user_message_id: int


@dataclass(frozen=True)
class TurnRetried:
    """The failed last turn runs again from its stored user message (no new user message)."""

    conversation_id: int
    user_message_id: int


@dataclass(frozen=True)
class ConversationChanged:
    conversation_id: int


@dataclass(frozen=True)
class BranchChanged:
    """The active branch was moved (regenerate, edit): show the conversation again from the store."""

    conversation_id: int


@dataclass(frozen=True)
class ContextBuilt:
    """A request was built: its estimated size against the budget, and where its window starts."""

    conversation_id: int
    estimated_tokens: int
    budget_tokens: int
    first_message_id: int | None
    truncated: bool


@dataclass(frozen=True)
class Notice:
    """Text for the user that is not part of the conversation (``/help``)."""

    text: str


@dataclass(frozen=True)
class ModelSwitched:
    model: str
    previous: str | None
    reason: str


@dataclass(frozen=True)
class AssistantStarted:
    """A request went out; the model is thinking."""

    model: str


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning (shown apart from the answer, never sent back)."""

    text: str


@dataclass(frozen=True)
class TextToReasoning:
    """The answer text streamed so far was reasoning after all (a reply that only closed ``</think>``)."""

    text: str


@dataclass(frozen=True)
class AssistantFinished:
    message_id: int | None
    text: str
    model: str
    status: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning: str = ""


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str
    summary: str


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    arguments: str
    result: ToolResult
    message_id: int
    role: str


@dataclass(frozen=True)
class ErrorEvent:
    message: str
    kind: str = "error"


@dataclass(frozen=True)
class Done:
    status: str  # complete | cancelled | error | max_rounds
    conversation_id: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)


Event = (
    TurnStarted
    | TurnRetried
    | ConversationChanged
    | BranchChanged
    | ContextBuilt
    | Notice
    | ModelSwitched
    | AssistantStarted
    | TextDelta
    | ReasoningDelta
    | TextToReasoning
    | AssistantFinished
    | ToolStarted
    | ToolFinished
    | ErrorEvent
    | Done
)
