"""The app's actions that the keys and the command palette name app-wide: most are done by the
conversation on screen (``conversation_view``), the picture actions by ui/image_actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Collapsible

from tui_agent.ui import image_actions

if TYPE_CHECKING:
    from tui_agent.core.vault import Vault
    from tui_agent.ui.conversation_view import ConversationView


class AppActions:
    """Mixed into AgentApp (a Textual App with ``vault`` and ``conversation_view``). Actions only:
    Textual collects ``@on`` handlers from its own classes, not from a mixin like this one."""

    vault: Vault
    conversation_view: ConversationView

    # The keys and the palette name the conversation's actions here (app-wide): the view does them.
    async def action_help(self) -> None:
        await self.conversation_view.action_help()

    async def action_new_conversation(self) -> None:
        await self.conversation_view.action_new_conversation()

    async def jump_to_message(self, conversation_id: int, message_id: int) -> None:
        await self.conversation_view.jump_to_message(conversation_id, message_id)  # a history-search hit

    def action_cancel_turn(self) -> None:
        self.conversation_view.action_cancel_turn()

    def action_retry_turn(self) -> None:
        self.conversation_view.action_retry_turn()

    def action_rename_conversation(self) -> None:
        self.conversation_view.action_rename_conversation()

    def action_delete_conversation(self) -> None:
        self.conversation_view.action_delete_conversation()

    def action_attach(self) -> None:
        self.conversation_view.action_attach()

    def action_toggle_tools(self) -> None:
        """Every tool block of the conversation on screen expanded, or all collapsed (Ctrl+O)."""
        from tui_agent.ui.widgets.thinking import ThinkingBlock

        blocks = [b for b in self.conversation_view.chat_log.query(Collapsible) if not isinstance(b, ThinkingBlock)]
        expand = any(block.collapsed for block in blocks)
        for block in blocks:
            block.collapsed = not expand

    def action_open_image(self) -> None:
        image_actions.open_image(self.conversation_view)

    async def action_download_image(self) -> None:
        await image_actions.download_image(self.conversation_view)

    def action_open_gallery(self) -> None:
        image_actions.open_gallery(self.conversation_view)

    def action_edit_picture(self) -> None:
        image_actions.edit_picture(self.conversation_view)  # "e" on a carousel, the message menu, the palette

    def action_select_messages(self) -> None:
        self.conversation_view.action_select_messages()

    def action_message_menu(self) -> None:
        self.conversation_view.action_message_menu()

    def action_copy_message(self) -> None:
        self.conversation_view.action_copy_message()

    def action_copy_to_prompt(self) -> None:
        self.conversation_view.action_copy_to_prompt()

    def action_regenerate(self) -> None:
        self.conversation_view.action_regenerate()

    def action_edit_message(self) -> None:
        self.conversation_view.action_edit_message()

    def action_alternative(self, delta: int) -> None:
        self.conversation_view.action_alternative(delta)

    def action_export_markdown(self) -> None:
        self.conversation_view.action_export_markdown()

    def action_export_json(self) -> None:
        self.conversation_view.action_export_json()
