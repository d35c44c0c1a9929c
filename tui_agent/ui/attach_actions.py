"""The conversation view's attachments: Ctrl+T picks a picture, it is copied into the vault's
media/ (an error card says why not) and shown above the composer until the next message takes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.widgets import Static

from tui_agent.core.textsafe import visible
from tui_agent.ui.errors import friendly
from tui_agent.ui.widgets.bubbles import ErrorCard

if TYPE_CHECKING:
    from textual.containers import Vertical

    from tui_agent.core.vault import Vault
    from tui_agent.ui.widgets.chat_log import ChatLog
    from tui_agent.ui.widgets.composer import Composer

    _Base = Vertical
else:
    _Base = object


class AttachActions(_Base):
    """For ConversationView."""

    pending_attachments: list[str]

    if TYPE_CHECKING:

        @property
        def vault(self) -> Vault: ...

        @property
        def chat_log(self) -> ChatLog: ...

        @property
        def composer(self) -> Composer: ...

    def action_attach(self) -> None:
        from pathlib import Path

        from tui_agent.ui.screens.dialogs import AttachScreen

        def chosen(source: str | None) -> None:
            if source:
                self.attach(source)

        self.app.push_screen(AttachScreen(Path.cwd()), chosen)

    @work(group="attach", exit_on_error=False)
    async def attach(self, source: str) -> None:
        from tui_agent.core.attachments import AttachmentError, import_image

        try:
            relative = await import_image(self.vault, source)
        except AttachmentError as exc:
            await self.chat_log.mount(ErrorCard(friendly("attachment", str(exc))))
            return
        self.pending_attachments.append(relative)
        self.show_pending_attachments()
        self.composer.focus()

    def show_pending_attachments(self) -> None:
        pending = self.query_one("#pending-attachments", Static)
        text = visible("📎 " + ", ".join(self.pending_attachments)) if self.pending_attachments else ""
        if text != pending.content:  # unchanged (none before, none now): not laid out again
            pending.update(text)
            pending.display = bool(self.pending_attachments)
