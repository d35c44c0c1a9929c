"""Actions on one message: copy (whole, code block, tool result), copy to prompt, regenerate,
edit and resend, alternatives, export. Held by the conversation view (its ``action_*`` methods
call these); the message is the one under the cursor, else the newest one that fits the action."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.widget import Widget

from tui_agent.core.textsafe import visible
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble

if TYPE_CHECKING:
    from tui_agent.core.vault import Vault
    from tui_agent.ui.host import ActionsHost

STILL_RUNNING = "A reply is still running here: wait, or press Esc to cancel it."


class MessageActions:
    """The conversation view's actions on its messages (``view``: what they read and change)."""

    def __init__(self, view: ActionsHost) -> None:
        self.view = view

    # ------------------------------------------------------------- targets
    def target(self, kinds: tuple[type, ...] = (Widget,)) -> Widget | None:
        cursor = self.view.chat_log.cursor
        if cursor is not None and isinstance(cursor, kinds):
            return cursor
        if cursor is not None:
            return None
        for widget in reversed(self.view.chat_log.selectable()):
            if isinstance(widget, kinds) and getattr(widget, "text", None):
                return widget
        return None

    def message_menu(self) -> None:
        widget = self.target()
        if widget is None:
            self.view.notify("No message here yet.")
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
            actions.append(MessageAction("app.open_image", "Open the image full size", "F3"))
            actions.append(MessageAction("app.edit_picture", "Edit this picture (/edit in the composer)"))
        actions.append(MessageAction("export_markdown", "Export the conversation as Markdown"))
        actions.append(MessageAction("export_json", "Export the conversation as JSON"))

        async def chosen(action: str | None) -> None:
            if self.view.chat_log.cursor is not None:
                self.view.chat_log.focus()
            if action:
                await self.view.run_action(action)

        self.view.app.push_screen(MessageActionsScreen("Message actions", actions), chosen)

    # ---------------------------------------------------------------- copy
    def copy_message(self) -> None:
        widget = self.target()
        if widget is None or not getattr(widget, "text", ""):
            self.view.notify("Nothing to copy here.")
            return
        self.view.app.copy_to_clipboard(str(widget.text))  # type: ignore[attr-defined]

    def copy_code(self, index: int) -> None:
        widget = self.target((AssistantBubble,))
        from tui_agent.ui.code_blocks import code_blocks

        blocks = code_blocks(widget.text) if isinstance(widget, AssistantBubble) else []
        if not 0 <= index < len(blocks):
            self.view.notify("That reply has no such code block.", severity="warning")
            return
        self.view.app.copy_to_clipboard(blocks[index].code)

    def copy_to_prompt(self) -> None:
        widget = self.target()
        if widget is None or not getattr(widget, "text", ""):
            return
        from tui_agent.core.textsafe import clipboard_text

        self.view.composer.load_text(clipboard_text(str(widget.text)))  # type: ignore[attr-defined]
        self.view.composer.move_cursor(self.view.composer.document.end)
        self.view.composer.focus()

    # --------------------------------------------------- regenerate / edit
    def regenerate(self) -> None:
        widget = self.target((AssistantBubble,))
        if not isinstance(widget, AssistantBubble) or widget.message_id is None:
            self.view.notify("Choose a finished reply to regenerate (Up to move the cursor).", severity="warning")
            return
        if self.view.conversation_id in self.view.turns:
            self.view.notify(STILL_RUNNING, severity="warning")
            return
        self.view.turns[self.view.conversation_id] = self.view.run_turn(
            self.view.conversation_id, "", [], regenerate=widget.message_id
        )

    def edit_message(self) -> None:
        widget = self.target((UserBubble,))
        if not isinstance(widget, UserBubble) or widget.message_id is None:
            self.view.notify("Choose one of your messages to edit (Up to move the cursor).", severity="warning")
            return
        self.view.editing = widget.message_id
        from tui_agent.core.textsafe import clipboard_text

        self.view.composer.load_text(clipboard_text(widget.text))  # an imported message's controls stay out
        self.view.composer.move_cursor(self.view.composer.document.end)
        self.view.composer.focus()
        self.view.status_line.show("editing a sent message · Enter resends it as a new branch · Esc stops editing")

    def stop_editing(self) -> bool:
        if self.view.editing is None:
            return False
        self.view.editing = None
        self.view.composer.clear()
        self.view.status_line.show("edit discarded")
        return True

    # -------------------------------------------------------- alternatives
    def alternative(self, delta: int) -> None:
        widget = self.target((AssistantBubble, UserBubble))
        bars = list(widget.query(AlternativesBar)) if widget is not None else []
        if not bars:
            self.view.notify("This message has no alternatives.")
            return
        bars[0].step(delta)

    async def alternative_chosen(self, event: AlternativesBar.Chosen) -> None:

        if self.view.conversation_id in self.view.turns:
            self.view.notify("Wait for the running reply (or Esc) before switching branches.", severity="warning")
            return
        log = self.view.chat_log
        # The message being replaced: the chosen one takes its place on screen (and the cursor).
        shown = next((w for w in log.selectable() if event.message_id in _alternative_ids(w)), None)
        offset = shown.virtual_region.y - log.scroll_y if shown is not None else None
        cursor = log.cursor is not None or log.has_focus
        from tui_agent.ui.store_calls import read_or_say

        if await read_or_say(self.view, _choose, event.message_id) is None:
            return
        await log.show_message(event.message_id, offset=offset, cursor=cursor)

    # -------------------------------------------------------------- export
    def export_markdown(self) -> None:
        self.export("md")

    def export_json(self) -> None:
        self.export("json")

    def export(self, fmt: str) -> None:
        if self.view.conversation_id is None:
            self.view.notify("Nothing to export yet.")
            return
        self.view.run_worker(self._export(self.view.conversation_id, fmt), group="export", exit_on_error=False)

    async def _export(self, conversation_id: int, fmt: str) -> None:
        from tui_agent.core import export
        from tui_agent.core.store import worker
        from tui_agent.core.store.errors import STORE_FAILURES
        from tui_agent.ui.errors import store_unavailable
        from tui_agent.ui.terminal_probe import served_in_browser

        try:  # read and written on the store's thread
            out, images = await worker.run(_write_export, self.view.vault, conversation_id, fmt)
        except (OSError, export.ExportError) as exc:
            self.view.notify(visible(f"Could not export: {exc}"), severity="error")
            return
        except STORE_FAILURES as exc:
            self.view.notify(f"Could not export: {store_unavailable(exc)}", severity="error")
            return
        if served_in_browser():
            self.view.app.deliver_text(out, save_filename=out.name)
            self.view.notify(f"Downloading {out.name}")
            return
        extra = f" and {images} image(s) in {out.stem}_files/" if images else ""
        self.view.notify(visible(f"Exported to {_shown(out)}{extra}"), markup=False)


def _write_export(vault: Vault, conversation_id: int, fmt: str) -> tuple[Path, int]:
    """The conversation exported into the vault's exports/ (never over an earlier export, never
    through a symlink): the file and how many images went with it."""
    from tui_agent.core import export
    from tui_agent.core.store import history

    conversation = history.get_conversation(conversation_id)
    folder = vault.root / "exports"
    name = export.default_name(conversation, fmt)
    for attempt in range(2, 1000):
        out = folder / name
        try:
            if fmt == "json":
                export.write_json(conversation.id, out)
                return out, 0
            return out, export.to_markdown(vault, conversation.id, out).images
        except export.TargetExists:
            name = f"{Path(name).stem.rsplit('~', 1)[0]}~{attempt}.{fmt}"
    raise export.ExportError(f"too many exports named {name} in {folder}")


def _choose(message_id: int) -> bool:
    from tui_agent.core.store import branches

    branches.choose(message_id)
    return True


def _alternative_ids(widget: Widget) -> list[int]:
    return [i for bar in widget.query(AlternativesBar) for i in bar.ids]


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
