"""Messages the sidebar posts; separate so the app can handle them without importing the sidebar."""

from __future__ import annotations

from textual.message import Message


class ProfileChanged(Message):
    """The active profile or one of its fields changed."""


class ConversationSelected(Message):
    def __init__(self, conversation_id: int) -> None:
        super().__init__()
        self.conversation_id = conversation_id


class ConversationsAction(Message):
    """A sidebar button: new, rename or delete."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action


class McpStateChanged(Message):
    """An MCP server started, failed, died or changed its tools."""
