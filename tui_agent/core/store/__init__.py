"""Persistence: Peewee models over one SQLite file, versioned schema, FTS."""

from tui_agent.core.store.db import open_database
from tui_agent.core.store.models import Attachment, Conversation, Message, MessageRevision, Profile, Setting

__all__ = ["Attachment", "Conversation", "Message", "MessageRevision", "Profile", "Setting", "open_database"]
