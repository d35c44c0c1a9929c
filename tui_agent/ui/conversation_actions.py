"""What the conversation view does to a whole conversation besides showing it: rename and delete
(each asks first, in a dialog), and mark the message a history-search hit jumped to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui_agent.core.store import history
from tui_agent.ui.store_calls import read_or_say
from tui_agent.ui.widgets.own_styles import set_own_class

if TYPE_CHECKING:
    from tui_agent.ui.host import ConversationOps


def mark_found(view: ConversationOps, message_id: int) -> None:
    """The message (or the tool block of it) is marked and scrolled to the top of the log; the mark
    of an earlier jump goes (one hit is marked at a time)."""
    log = view.chat_log
    clear_found(view)
    log.release_anchor()
    for widget in log.children:
        if (
            getattr(widget, "message_id", None) == message_id
            or getattr(getattr(widget, "block", None), "message_id", None) == message_id
        ):
            set_own_class(widget, True, "-found")  # its text's background marked too
            view.call_after_refresh(log.scroll_to_widget, widget, top=True, animate=False)
            break


def clear_found(view: ConversationOps) -> None:
    """No message marked as a search hit any more (the user sent a message, or jumped again)."""
    for widget in view.chat_log.query_children(".-found"):
        set_own_class(widget, False, "-found")


def rename(view: ConversationOps) -> None:
    if view.conversation_id is None:
        view.notify("Nothing to rename yet: send a message first.")
        return
    conversation_id = view.conversation_id
    from tui_agent.ui.screens.dialogs import PromptScreen

    async def done(title: str | None) -> None:
        if title:
            if await read_or_say(view, _rename, conversation_id, title) is None:
                return
            same = view.conversation_id == conversation_id  # (the dialog was open meanwhile)
            await view.deps.show_title(view.title(title.strip()[:200]) if same else view.title(), True)

    view.app.push_screen(PromptScreen("Rename conversation", view.title()), done)


def delete(view: ConversationOps) -> None:
    if view.conversation_id is None:
        return
    conversation_id = view.conversation_id
    from tui_agent.ui.screens.dialogs import ConfirmScreen

    async def done(confirmed: bool | None) -> None:
        if confirmed:
            worker = view.turns.pop(conversation_id, None)
            if worker is not None:
                worker.cancel()
            if await read_or_say(view, _delete, conversation_id) is None:
                return
            await view.open_conversation(None)

    view.app.push_screen(ConfirmScreen(f"Delete “{view.title()}” and all its messages?"), done)


def _rename(conversation_id: int, title: str) -> bool:
    history.rename_conversation(conversation_id, title)
    return True


def _delete(conversation_id: int) -> bool:
    history.delete_conversation(conversation_id)
    return True
