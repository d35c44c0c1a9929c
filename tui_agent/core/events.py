"""Typed events of the unified loop, consumed alike by the TUI and ``tui-agent ask``.

Immutable value classes written out by hand: as frozen dataclasses, the sixteen of them cost
12-19 ms at import (each generated six methods with ``exec``), on the path of the first request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_agent.core.tools.base import ToolResult

_set = object.__setattr__


class _Event:
    """Fields are the ``__slots__`` (its own and its bases'), set once by ``__init__``; equal when
    of one type and values."""

    __slots__: tuple[str, ...] = ()
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls) -> None:
        cls._fields = tuple(name for c in reversed(cls.__mro__) for name in c.__dict__.get("__slots__", ()))

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle build it anew, by field name
        return (_rebuild, (type(self), dict(zip(self._fields, self._values(), strict=True))))


def _rebuild(cls: type[_Event], fields: dict[str, Any]) -> _Event:
    return cls(**fields)


class _Text(_Event):
    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        _set(self, "text", text)


class _InConversation(_Event):
    __slots__ = ("conversation_id",)
    conversation_id: int

    def __init__(self, conversation_id: int) -> None:
        _set(self, "conversation_id", conversation_id)


class _UserTurn(_Event):
    __slots__ = ("conversation_id", "user_message_id")
    conversation_id: int
    user_message_id: int

    def __init__(self, conversation_id: int, user_message_id: int) -> None:
        _set(self, "conversation_id", conversation_id)
        _set(self, "user_message_id", user_message_id)


class StoredMessage(_Event):
    """A message as the loop stored it, with what the screen draws of it: its text, its attached
    files (vault-relative, in order) and, at a fork, the ids of it and its alternatives (oldest
    first; empty when it has none), so that nothing is read back from the store to draw it."""

    __slots__ = ("alternatives", "attachments", "content", "id")
    id: int
    content: str
    attachments: tuple[str, ...]
    alternatives: tuple[int, ...]

    def __init__(
        self, id: int, content: str, attachments: Sequence[str] = (), alternatives: Sequence[int] = ()
    ) -> None:
        _set(self, "id", id)
        _set(self, "content", content)
        _set(self, "attachments", tuple(attachments))
        _set(self, "alternatives", tuple(alternatives))

    @property
    def position(self) -> int | None:
        """1-based place among its alternatives (the "n" of "◀ n / N ▶"), None when it has none."""
        return self.alternatives.index(self.id) + 1 if self.id in self.alternatives else None


class TurnStarted(_UserTurn):
    """The user's message is stored (``message``); ``title``: the conversation's title now (a new
    conversation is titled by its first message)."""

    __slots__ = ("message", "title")
    message: StoredMessage
    title: str

    def __init__(self, conversation_id: int, user_message_id: int, message: StoredMessage, title: str = "") -> None:
        super().__init__(conversation_id, user_message_id)
        _set(self, "message", message)
        _set(self, "title", title)


class TurnRetried(_UserTurn):
    """The failed last turn runs again from its stored user message (no new user message)."""

    __slots__ = ()


class ConversationChanged(_InConversation):
    """The turn runs in another conversation (a new one): its ``title`` as stored ("" if none yet)."""

    __slots__ = ("title",)
    title: str

    def __init__(self, conversation_id: int, title: str = "") -> None:
        super().__init__(conversation_id)
        _set(self, "title", title)


class BranchChanged(_InConversation):
    """The active branch was moved (regenerate, edit): show the conversation again from the store."""

    __slots__ = ()


class ContextBuilt(_Event):
    """A request was built: its estimated size against the budget, and where its window starts."""

    __slots__ = ("budget_tokens", "conversation_id", "estimated_tokens", "first_message_id", "truncated")
    conversation_id: int
    estimated_tokens: int
    budget_tokens: int
    first_message_id: int | None
    truncated: bool

    def __init__(
        self,
        conversation_id: int,
        estimated_tokens: int,
        budget_tokens: int,
        first_message_id: int | None,
        truncated: bool,
    ) -> None:
        _set(self, "conversation_id", conversation_id)
        _set(self, "estimated_tokens", estimated_tokens)
        _set(self, "budget_tokens", budget_tokens)
        _set(self, "first_message_id", first_message_id)
        _set(self, "truncated", truncated)


class Notice(_Text):
    """Text for the user that is not part of the conversation (``/help``)."""

    __slots__ = ()


class ModelNotice(_Text):
    """One line about the model or its server the user must know (the window is too small for the
    tools, the server cut the prompt, the model cannot call tools or see images); said once."""

    __slots__ = ()


class ModelSwitched(_Event):
    __slots__ = ("model", "previous", "reason")
    model: str
    previous: str | None
    reason: str

    def __init__(self, model: str, previous: str | None, reason: str) -> None:
        _set(self, "model", model)
        _set(self, "previous", previous)
        _set(self, "reason", reason)


class AssistantStarted(_Event):
    """A request went out; the model is thinking."""

    __slots__ = ("model",)
    model: str

    def __init__(self, model: str) -> None:
        _set(self, "model", model)


class TextDelta(_Text):
    __slots__ = ()


class ReasoningDelta(_Text):
    """A piece of the model's reasoning (shown apart from the answer, never sent back)."""

    __slots__ = ()


class TextToReasoning(_Text):
    """The answer text streamed so far was reasoning after all (a reply that only closed ``</think>``)."""

    __slots__ = ()


class AssistantFinished(_Event):
    """The reply is stored (``message_id``, None if nothing was); ``alternatives``: the ids of it and
    the replies it stands beside (regenerated), oldest first, or empty."""

    __slots__ = (
        "alternatives",
        "completion_tokens",
        "message_id",
        "model",
        "prompt_tokens",
        "reasoning",
        "status",
        "text",
    )
    message_id: int | None
    text: str
    model: str
    status: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning: str
    alternatives: tuple[int, ...]

    def __init__(
        self,
        message_id: int | None,
        text: str,
        model: str,
        status: str,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        reasoning: str = "",
        alternatives: Sequence[int] = (),
    ) -> None:
        _set(self, "message_id", message_id)
        _set(self, "text", text)
        _set(self, "model", model)
        _set(self, "status", status)
        _set(self, "prompt_tokens", prompt_tokens)
        _set(self, "completion_tokens", completion_tokens)
        _set(self, "reasoning", reasoning)
        _set(self, "alternatives", tuple(alternatives))


class ToolStarted(_Event):
    __slots__ = ("arguments", "call_id", "name", "summary")
    call_id: str
    name: str
    arguments: str
    summary: str

    def __init__(self, call_id: str, name: str, arguments: str, summary: str) -> None:
        _set(self, "call_id", call_id)
        _set(self, "name", name)
        _set(self, "arguments", arguments)
        _set(self, "summary", summary)


class ToolFinished(_Event):
    __slots__ = ("arguments", "call_id", "message_id", "name", "result", "role")
    call_id: str
    name: str
    arguments: str
    result: ToolResult
    message_id: int
    role: str

    def __init__(self, call_id: str, name: str, arguments: str, result: ToolResult, message_id: int, role: str) -> None:
        _set(self, "call_id", call_id)
        _set(self, "name", name)
        _set(self, "arguments", arguments)
        _set(self, "result", result)
        _set(self, "message_id", message_id)
        _set(self, "role", role)


class ErrorEvent(_Event):
    """The turn failed; ``message_id``: the reply the failure cut, as far as it is stored (the store
    went away mid-reply), so that the screen knows its bubble as that row; ``kept_in``: the file
    that reply was kept in then (core/reply_keep.py; ``message`` names it too)."""

    __slots__ = ("kept_in", "kind", "message", "message_id")
    message: str
    kind: str
    message_id: int | None
    kept_in: str | None

    def __init__(
        self, message: str, kind: str = "error", message_id: int | None = None, kept_in: str | None = None
    ) -> None:
        _set(self, "message", message)
        _set(self, "kind", kind)
        _set(self, "message_id", message_id)
        _set(self, "kept_in", kept_in)


class Done(_Event):
    __slots__ = ("conversation_id", "status")
    status: str  # complete | cancelled | error | max_rounds
    conversation_id: int | None

    def __init__(self, status: str, conversation_id: int | None = None) -> None:
        _set(self, "status", status)
        _set(self, "conversation_id", conversation_id)


Event = (
    TurnStarted
    | TurnRetried
    | ConversationChanged
    | BranchChanged
    | ContextBuilt
    | Notice
    | ModelNotice
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
