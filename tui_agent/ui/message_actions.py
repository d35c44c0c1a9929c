"""Actions on one message: copy (whole, code block, tool result), copy to prompt, regenerate,
edit and resend, alternatives, export. Mixed into the app; the message is the one under the
cursor, else the newest one that fits the action."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.widget import Widget

from tui_agent.core.textsafe import visible
from tui_agent.ui.conversations import ConversationsApp
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble
from tui_agent.ui.widgets.composer import Composer
from tui_agent.ui.widgets.message_cursor import CursorAction, CursorLeft

if TYPE_CHECKING:
    from textual.worker import Worker

    from tui_agent.core.vault import Vault
    from tui_agent.ui.widgets.status import StatusLine


class MessageActionsMixin(ConversationsApp):
    """The base of AgentApp (above ConversationsApp)."""

    editing: int | None = None  # the user message being edited in the composer

    if TYPE_CHECKING:
        vault: Vault

        @property
        def status_line(self) -> StatusLine: ...

        def run_turn(
            self,
            conversation_id: int | None,
            text: str,
            attachments: list[str],
            *,
            edit_of: int | None = None,
            regenerate: int | None = None,
        ) -> Worker[None]: ...

    # ------------------------------------------------------------- targets
    def _target(self, kinds: tuple[type, ...] = (Widget,)) -> Widget | None:
        cursor = self.chat_log.cursor
        if cursor is not None and isinstance(cursor, kinds):
            return cursor
        if cursor is not None:
            return None
        for widget in reversed(self.chat_log.selectable()):
            if isinstance(widget, kinds) and getattr(widget, "text", None):
                return widget
        return None

    @on(CursorAction)
    async def _cursor_action(self, event: CursorAction) -> None:
        await self.run_action(event.action)

    @on(CursorLeft)
    def _cursor_left(self) -> None:
        self.composer.focus()

    @on(Composer.ScrollLog)
    async def _scroll_log(self, event: Composer.ScrollLog) -> None:
        if event.where == "end":
            await self.chat_log.go_to_end()
        elif event.where == "page_up":
            self.chat_log.scroll_page_up()
        else:
            await self.chat_log.action_page_down()

    def action_select_messages(self) -> None:
        self.chat_log.enter_cursor()

    def action_message_menu(self) -> None:
        widget = self._target()
        if widget is None:
            self.notify("No message here yet.")
            return
        from tui_agent.ui.code_blocks import code_blocks  # with the menu: not on the first paint
        from tui_agent.ui.screens.message_actions import MessageAction, MessageActionsScreen

        actions = [MessageAction("copy_message", "Copy the whole message", "c")]
        blocks = code_blocks(str(getattr(widget, "text", ""))) if isinstance(widget, AssistantBubble) else []
        actions += [
            MessageAction(f"copy_code({i})", f"Copy code block {i + 1} ({b.label})") for i, b in enumerate(blocks)
        ]
        actions.append(MessageAction("copy_to_prompt", "Copy to prompt", "p"))
        if isinstance(widget, AssistantBubble):
            actions.append(MessageAction("regenerate", "Regenerate this reply", "r"))
        if isinstance(widget, UserBubble):
            actions.append(MessageAction("edit_message", "Edit and resend (keeps this branch)", "e"))
        if widget.query(AlternativesBar):
            actions.append(MessageAction("alternative(1)", "Next alternative", "→"))
            actions.append(MessageAction("alternative(-1)", "Previous alternative", "←"))
        if widget.query("ImageCarousel"):
            actions.append(MessageAction("open_image", "Open the image full size", "F3"))
        actions.append(MessageAction("export_markdown", "Export the conversation as Markdown"))
        actions.append(MessageAction("export_json", "Export the conversation as JSON"))

        async def chosen(action: str | None) -> None:
            if self.chat_log.cursor is not None:
                self.chat_log.focus()
            if action:
                await self.run_action(action)

        self.push_screen(MessageActionsScreen("Message actions", actions), chosen)

    # ---------------------------------------------------------------- copy
    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (ours and Textual's text selection) goes every way available, and says which."""
        from tui_agent.core.textsafe import clipboard_text
        from tui_agent.ui.clipboard import copy_text
        from tui_agent.ui.terminal_probe import served_in_browser

        self._clipboard = clipboard_text(text)
        driver = self._driver
        report = copy_text(text, driver.write if driver is not None else None)
        message = report.message()
        if served_in_browser() and report.arrived:
            message = message.replace("terminal (OSC 52)", "browser clipboard")
        self.notify(message, severity="information" if report.arrived else "error")

    def action_copy_message(self) -> None:
        widget = self._target()
        if widget is None or not getattr(widget, "text", ""):
            self.notify("Nothing to copy here.")
            return
        self.copy_to_clipboard(str(widget.text))  # type: ignore[attr-defined]

    def action_copy_code(self, index: int) -> None:
        widget = self._target((AssistantBubble,))
        from tui_agent.ui.code_blocks import code_blocks

        blocks = code_blocks(widget.text) if isinstance(widget, AssistantBubble) else []
        if not 0 <= index < len(blocks):
            self.notify("That reply has no such code block.", severity="warning")
            return
        self.copy_to_clipboard(blocks[index].code)

    def action_copy_to_prompt(self) -> None:
        widget = self._target()
        if widget is None or not getattr(widget, "text", ""):
            return
        from tui_agent.core.textsafe import clipboard_text

        self.composer.load_text(clipboard_text(str(widget.text)))  # type: ignore[attr-defined]
        self.composer.move_cursor(self.composer.document.end)
        self.composer.focus()

    # --------------------------------------------------- regenerate / edit
    def action_regenerate(self) -> None:
        widget = self._target((AssistantBubble,))
        if not isinstance(widget, AssistantBubble) or widget.message_id is None:
            self.notify("Choose a finished reply to regenerate (Up to move the cursor).", severity="warning")
            return
        if self.conversation_id in self.turns:
            self.notify("A reply is still running here: wait, or press Esc to cancel it.", severity="warning")
            return
        self.turns[self.conversation_id] = self.run_turn(self.conversation_id, "", [], regenerate=widget.message_id)

    def action_edit_message(self) -> None:
        widget = self._target((UserBubble,))
        if not isinstance(widget, UserBubble) or widget.message_id is None:
            self.notify("Choose one of your messages to edit (Up to move the cursor).", severity="warning")
            return
        self.editing = widget.message_id
        from tui_agent.core.textsafe import clipboard_text

        self.composer.load_text(clipboard_text(widget.text))  # an imported message's controls stay out
        self.composer.move_cursor(self.composer.document.end)
        self.composer.focus()
        self.status_line.show("editing a sent message · Enter resends it as a new branch · Esc stops editing")

    def stop_editing(self) -> bool:
        if self.editing is None:
            return False
        self.editing = None
        self.composer.clear()
        self.status_line.show("edit discarded")
        return True

    # -------------------------------------------------------- alternatives
    def action_alternative(self, delta: int) -> None:
        widget = self._target((AssistantBubble, UserBubble))
        bars = list(widget.query(AlternativesBar)) if widget is not None else []
        if not bars:
            self.notify("This message has no alternatives.")
            return
        bars[0].step(delta)

    @on(AlternativesBar.Chosen)
    async def _alternative_chosen(self, event: AlternativesBar.Chosen) -> None:
        from tui_agent.core.store import branches

        if self.conversation_id in self.turns:
            self.notify("Wait for the running reply (or Esc) before switching branches.", severity="warning")
            return
        log = self.chat_log
        # The message being replaced: the chosen one takes its place on screen (and the cursor).
        shown = next((w for w in log.selectable() if event.message_id in _alternative_ids(w)), None)
        offset = shown.virtual_region.y - log.scroll_y if shown is not None else None
        cursor = log.cursor is not None or log.has_focus
        branches.choose(event.message_id)
        await log.show_message(event.message_id, offset=offset, cursor=cursor)

    # -------------------------------------------------------------- export
    def action_export_markdown(self) -> None:
        self._export("md")

    def action_export_json(self) -> None:
        self._export("json")

    def _export(self, fmt: str) -> None:
        from tui_agent.core import export
        from tui_agent.core.store import history
        from tui_agent.ui.terminal_probe import served_in_browser

        if self.conversation_id is None:
            self.notify("Nothing to export yet.")
            return
        conversation = history.get_conversation(self.conversation_id)
        folder = self.vault.root / "exports"
        name = export.default_name(conversation, fmt)
        for attempt in range(2, 1000):  # never over an earlier export, never through a symlink
            out = folder / name
            try:
                if fmt == "json":
                    export.write_json(conversation.id, out)
                    images = 0
                else:
                    images = export.to_markdown(self.vault, conversation.id, out).images
                break
            except export.TargetExists:
                name = f"{Path(name).stem.rsplit('~', 1)[0]}~{attempt}.{fmt}"
            except (OSError, export.ExportError) as exc:
                self.notify(visible(f"Could not export: {exc}"), severity="error")
                return
        if served_in_browser():
            self.deliver_text(out, save_filename=out.name)
            self.notify(f"Downloading {out.name}")
            return
        extra = f" and {images} image(s) in {out.stem}_files/" if images else ""
        self.notify(visible(f"Exported to {_shown(out)}{extra}"), markup=False)


def _alternative_ids(widget: Widget) -> list[int]:
    return [i for bar in widget.query(AlternativesBar) for i in bar.ids]


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
