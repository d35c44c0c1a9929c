"""The pictures a conversation holds: what its tools and the user may edit or show again from it."""

from __future__ import annotations

import re
from typing import Any

from tui_agent.core.store.models import Attachment, Message

# A vault picture named in a user's words ("/edit media/fox.png make it bluer", "look at media/a.png").
NAMED = re.compile(r"(?<![\w/.-])media/[A-Za-z0-9][A-Za-z0-9/_.-]*\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)


def held_pictures(conversation_id: int) -> set[str]:
    """``media/...`` names: attached to one of the conversation's messages (generated, shown or
    attached there, on any branch) or named by the user in one of its messages. Two queries."""
    attached: Any = Attachment.select(Attachment.path).join(Message).where(Message.conversation == conversation_id)
    held = {str(row[0]) for row in attached.tuples()}
    named: Any = Message.select(Message.content).where(
        Message.conversation == conversation_id, Message.role == "user", Message.content.contains("media/")
    )
    for row in named.tuples():
        held.update(NAMED.findall(row[0] or ""))
    return held
