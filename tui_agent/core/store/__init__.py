"""Persistence: Peewee models over one SQLite file or a PostgreSQL database, versioned schema, search."""

from tui_agent.core.store.driver import import_peewee

import_peewee()  # first, before any module of the store imports peewee: see store/driver.py

from tui_agent.core.store.db import open_database  # noqa: E402
from tui_agent.core.store.models import (  # noqa: E402
    Attachment,
    Conversation,
    Message,
    MessageRevision,
    Profile,
    Setting,
)

__all__ = ["Attachment", "Conversation", "Message", "MessageRevision", "Profile", "Setting", "open_database"]
