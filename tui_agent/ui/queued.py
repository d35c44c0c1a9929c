"""Messages sent while a reply runs: each waits, shown on a line above the composer, and is sent
as its own turn when the reply ends. A reply that is cancelled or fails sends nothing more: what
waited goes back into the composer, each message on its own paragraph (never glued together)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.widgets import Static

from tui_agent.core.textsafe import visible

if TYPE_CHECKING:
    from tui_agent.ui.host import QueueHost

LINE_ID = "queued"
PREVIEW_CHARS = 60


class SendQueue:
    def __init__(self, host: QueueHost) -> None:
        self.host = host
        self.waiting: list[str] = []
        self.conversation_id: int | None = None  # the conversation they were written in

    async def add(self, conversation_id: int | None, text: str) -> None:
        if not self.waiting:
            self.conversation_id = conversation_id
        self.waiting.append(text)
        await self.show()

    async def turn_ended(self, conversation_ids: Iterable[int | None], status: str | None) -> None:
        """The reply of one of ``conversation_ids`` ended with ``status`` (None: cancelled or lost)."""
        ids = set(conversation_ids)
        if not self.waiting or self.conversation_id not in ids:
            return
        if self.conversation_id is None:  # written while the turn's new conversation had no id yet
            self.conversation_id = next((i for i in ids if i is not None), None)
        host = self.host
        if status == "complete" and host.conversation_id == self.conversation_id:
            text = self.waiting.pop(0)
            await self.show()
            from tui_agent.ui.widgets.composer import Composer

            host.post_message(Composer.Submitted(text))  # as if Enter were pressed now: its own turn
            return
        texts, self.waiting = self.waiting, []
        await self.show()
        current = host.composer.text
        host.composer.load_text("\n\n".join([*texts, current] if current.strip() else texts))
        host.composer.move_cursor(host.composer.document.end)
        count = "message is" if len(texts) == 1 else f"{len(texts)} messages are"
        host.notify(f"Not sent (the reply did not finish): your queued {count} back in the composer.")

    async def show(self) -> None:
        host = self.host
        found = list(host.query(f"#{LINE_ID}").results(Static))
        if not self.waiting:
            for line in found:
                line.display = False
            return
        shown = " · ".join(_short(text) for text in self.waiting)
        text = f"⏳ queued, sent when the reply ends (Esc cancels the reply and gives it back): {shown}"
        if found:
            found[0].update(text)
            found[0].display = True
        else:
            await host.mount(QueuedLine(text, id=LINE_ID, markup=False), before=host.composer)


class QueuedLine(Static):
    DEFAULT_CSS = """
    QueuedLine { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """


def _short(text: str) -> str:
    line = " ".join(visible(text).split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"
