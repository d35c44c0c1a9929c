"""The app's panel, image and help actions: sidebar, thinking and tool blocks, attach, log,
help, opening and downloading images. Mixed into the app (above the message actions)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.binding import Binding
from textual.widgets import Collapsible, Static

from tui_agent.core import slash
from tui_agent.core.textsafe import visible
from tui_agent.ui.errors import friendly
from tui_agent.ui.message_actions import MessageActionsMixin
from tui_agent.ui.widgets.bubbles import ErrorCard, NoticeCard
from tui_agent.ui.widgets.carousel import ImageCarousel
from tui_agent.ui.widgets.sidebar_messages import ProfileChanged

if TYPE_CHECKING:
    from tui_agent.core.store.models import Profile


class PanelActionsMixin(MessageActionsMixin):
    """The base of AgentApp (above MessageActionsMixin)."""

    pending_attachments: list[str]

    if TYPE_CHECKING:

        @property
        def profile(self) -> Profile: ...

    # ------------------------------------------------------- other actions
    async def action_toggle_sidebar(self) -> None:
        """The sidebar is built (and imported) on first use: it is not needed for the first paint."""
        from tui_agent.ui.widgets.sidebar import Sidebar

        existing = self.query(Sidebar)
        if existing:
            sidebar = existing.first()
            sidebar.display = not sidebar.display
            if not sidebar.display:
                self.composer.focus()  # never leave focus in a hidden field
            return
        await self.query_one("#main").mount(Sidebar(id="sidebar"), before=0)

    @on(ProfileChanged)
    def _profile_changed(self) -> None:
        self.status_line.ready(self.profile.chat_model)

    def action_toggle_thinking(self) -> None:
        from tui_agent.ui.widgets.thinking import toggle_all

        toggle_all(self)

    def action_toggle_tools(self) -> None:
        from tui_agent.ui.widgets.thinking import ThinkingBlock

        blocks = [b for b in self.chat_log.query(Collapsible) if not isinstance(b, ThinkingBlock)]
        expand = any(block.collapsed for block in blocks)
        for block in blocks:
            block.collapsed = not expand

    def action_attach(self) -> None:
        from tui_agent.ui.screens.dialogs import AttachScreen

        def chosen(source: str | None) -> None:
            if source:
                self.attach(source)

        self.push_screen(AttachScreen(Path.cwd()), chosen)

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

    def action_show_log(self) -> None:
        from tui_agent.ui.screens.log_screen import LogScreen

        self.push_screen(LogScreen(self.vault.log_file))

    async def action_help(self) -> None:
        keys = "\n".join(
            f"{binding.key:<10} {binding.description}" for binding in self.BINDINGS if isinstance(binding, Binding)
        )
        extra = (
            "ctrl+p     Command palette (also: search history)\n"
            "left/right Previous/next image (carousel focused)\n"
            "o          Open the image full size\n"
            "\nMessages (Up on an empty composer, or Alt+Up, or a click)\n"
            "up/down    Move the message cursor; down past the last returns to the composer\n"
            "enter      The message's actions (copy a code block, export, ...)\n"
            "c          Copy the message (its Markdown source)\n"
            "p          Copy it into the composer\n"
            "r          Regenerate a reply (earlier answers stay: left/right)\n"
            "e          Edit one of your messages and resend it (the old branch stays)\n"
            "left/right Previous/next alternative or branch\n"
            "escape     Back to the composer (also: stop editing)\n"
            "ctrl+up    Recall earlier messages into the composer"
        )
        await self.chat_log.mount(NoticeCard(f"Slash commands\n{slash.help_text()}\n\nKeys\n{keys}\n{extra}"))

    def action_open_image(self) -> None:
        """Open the focused carousel's image full size, else the newest image on screen."""
        focused = self.focused
        carousels = list(self.chat_log.query(ImageCarousel))
        carousel = focused if isinstance(focused, ImageCarousel) else (carousels[-1] if carousels else None)
        if carousel is None:
            self.notify("No image in this conversation yet.")
            return
        carousel.action_open()

    def _focused_or_newest_image(self) -> Path | None:
        focused = self.focused
        carousels = list(self.chat_log.query(ImageCarousel))
        carousel = focused if isinstance(focused, ImageCarousel) else (carousels[-1] if carousels else None)
        if carousel is None:
            self.notify("No image in this conversation yet.")
            return None
        return carousel.current

    def action_download_image(self) -> None:
        """Download the focused carousel's image, else the newest one (the browser saves the file)."""
        from tui_agent.ui.served_images import download_image

        if (path := self._focused_or_newest_image()) is not None:
            download_image(self, path, self.vault)

    def action_open_gallery(self) -> None:
        """In a browser (serve): a tab with this conversation's images, full size, left/right to page."""
        from tui_agent.ui.served_images import open_gallery

        if (path := self._focused_or_newest_image()) is not None:
            open_gallery(self, self.vault, self.conversation_id, path)

    @on(ImageCarousel.OpenRequested)
    def _open_image(self, event: ImageCarousel.OpenRequested) -> None:
        from tui_agent.ui.image_show import open_full_size

        shown = [p for carousel in self.chat_log.query(ImageCarousel) for p in carousel.paths]
        open_full_size(self, self.vault, event.path, list(dict.fromkeys(shown)) or event.paths)
