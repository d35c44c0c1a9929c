"""The composer: multi-line input. Enter sends; Shift+Enter or Ctrl+J inserts a newline;
Up on an empty composer moves into the messages (the message cursor); Ctrl+Up/Ctrl+Down recall
earlier messages; Tab completes slash commands; PageUp/PageDown scroll the chat, and End or Down
with the cursor at the end of the text bring the chat to its end."""

from __future__ import annotations

import logging
from collections.abc import Callable

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from tui_agent.core import slash
from tui_agent.core.textsafe import clipboard_text
from tui_agent.ui.typing_pace import pace_of
from tui_agent.ui.widgets.host import host_of

log = logging.getLogger("tui_agent.ui")

SENT, TYPED = "sent", "typed"  # what a key did (Composer._handle_key)


class Composer(TextArea):
    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class CursorRequested(Message):
        """Up on an empty composer: the user wants to move through the messages."""

    class ScrollLog(Message):
        """PageUp/PageDown (``page_up``/``page_down``), or End/Down at the end of the text (``end``):
        the chat log scrolls; the composer keeps the focus."""

        def __init__(self, where: str) -> None:
            super().__init__()
            self.where = where

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus", compact=True)
        self.placeholder = "Message (Enter sends, Ctrl+J newline, / for commands)"
        self._recall: list[str] = []
        self._recall_source: Callable[[], list[str]] | None = None
        self._recall_index: int | None = None

    @property
    def recall(self) -> list[str]:
        """Earlier messages of this conversation (oldest first): this sitting's, and the stored ones
        once Ctrl+Up read them (on the store's thread)."""
        return self._recall

    @recall.setter
    def recall(self, messages: list[str]) -> None:
        self._recall, self._recall_source = messages, None

    def recall_from(self, source: Callable[[], list[str]]) -> None:
        """Read the earlier messages only when Ctrl+Up needs them (not on the first paint); ``source``
        runs on the store's thread."""
        self._recall, self._recall_source, self._recall_index = [], source, None

    async def _read_recall(self) -> None:
        if self._recall_source is None:
            return
        from tui_agent.core.store import worker

        source, self._recall_source = self._recall_source, None
        try:
            earlier = await worker.run(source)
        except Exception:  # the store is away: this sitting's messages only, read again next time
            log.warning("earlier messages could not be read", exc_info=True)
            self._recall_source = source
            return
        sent = self._recall  # sent in this sitting before they were read: stored already, kept once
        for count in range(min(len(sent), len(earlier)), 0, -1):
            if earlier[-count:] == sent[:count]:
                sent = sent[count:]
                break
        self._recall = earlier + sent

    def on_mount(self) -> None:
        self.cursor_blink = host_of(self.app).live_motion

    async def _on_key(self, event: events.Key) -> None:
        done = await self._handle_key(event)
        # Once the key is drawn: a streaming reply's next write goes right behind a key that
        # edited the text (typing_pace); a key that scrolls, moves the focus or reaches the app's
        # bindings is not typing, and a message sent ends the typing.
        if done == SENT:
            pace_of(self.app).sent()
        elif done == TYPED:
            pace_of(self.app).typed()
            idle_gc = host_of(self.app).idle_gc
            if idle_gc is not None:
                idle_gc.typed()  # during a reply: the collector's full collections wait for a pause

    async def _handle_key(self, event: events.Key) -> str | None:
        """Acts on the key; says whether it sent the message (SENT) or edited the text (TYPED)."""
        key = event.key
        if key == "enter":
            event.prevent_default()
            event.stop()
            if self.text.strip():
                self.post_message(self.Submitted(self.text))
                return SENT
            return None
        if key in ("shift+enter", "ctrl+j"):
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return TYPED
        if key == "tab" and self._complete():
            event.prevent_default()
            event.stop()
            return TYPED
        if key == "up" and not self.text and self._recall_index is None:
            event.prevent_default()
            event.stop()
            self.post_message(self.CursorRequested())
            return None
        if key in ("pageup", "pagedown") or (
            key in ("end", "down") and self._recall_index is None and self.cursor_location == self.document.end
        ):
            event.prevent_default()
            event.stop()
            self.post_message(self.ScrollLog({"pageup": "page_up", "pagedown": "page_down"}.get(key, "end")))
            return None
        if key == "ctrl+up" or (key == "up" and self._recall_index is not None):
            await self._read_recall()
            if self.recall:
                event.prevent_default()
                event.stop()
                self._recall_step(-1)
                return None
        if key in ("down", "ctrl+down") and self._recall_index is not None:
            event.prevent_default()
            event.stop()
            self._recall_step(1)
            return None
        self._recall_index = None
        if not event.is_printable and await self._run_own_binding(event):
            return TYPED  # Backspace, Delete, the arrows...
        lines = self.virtual_size.height
        await super()._on_key(event)
        if not event.is_printable:
            return None
        if self.virtual_size.height == lines:  # typed, and the same size
            draw_typed = getattr(self.screen, "draw_typed", None)  # the chat screen's (ui/chat_screen.py)
            if draw_typed is not None:
                draw_typed(self)
        return TYPED

    async def _run_own_binding(self, event: events.Key) -> bool:
        """A key bound here (Backspace, Delete, the arrows, Ctrl+W...) is acted on here, as the
        app would act on it once the key had bubbled up to it through every container: the keys
        typed after it (already on their way to the composer) then land after its edit, not
        before it. The composer is first in the focus chain, so its binding is the one the app
        would choose too."""
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.node is not self or not active.enabled:
            return False
        if not await self.app.run_action(active.binding.action, self):
            return False
        event.prevent_default()
        event.stop()
        return True

    def _recall_step(self, step: int) -> None:
        index = len(self.recall) if self._recall_index is None else self._recall_index
        index = max(0, min(len(self.recall), index + step))
        self._recall_index = None if index == len(self.recall) else index
        # An earlier message may come from an import: no control character goes into the editor.
        self.load_text("" if self._recall_index is None else clipboard_text(self.recall[index]))
        self.move_cursor(self.document.end)

    def remember(self, text: str) -> None:
        """``text`` was sent: Ctrl+Up finds it (nothing is read for this)."""
        if text and (not self._recall or self._recall[-1] != text):
            self._recall.append(text)
        self._recall_index = None

    def matches(self) -> list[slash.SlashSpec]:
        text = self.text
        if not text.startswith("/") or " " in text or "\n" in text:
            return []
        return [spec for spec in slash.COMMANDS if ("/" + spec.name).startswith(text)]

    def _complete(self) -> bool:
        found = self.matches()
        if not found:
            return False
        self.load_text(f"/{found[0].name} " if found[0].name not in ("new", "help") else f"/{found[0].name}")
        self.move_cursor(self.document.end)
        return True


class SlashHints(OptionList):
    """Completion list for slash commands, shown while the composer holds ``/partial``."""

    DEFAULT_CSS = """
    SlashHints { height: auto; max-height: 10; display: none; border: none; }
    SlashHints.-visible { display: block; }
    """

    def show(self, specs: list[slash.SlashSpec]) -> None:
        self.clear_options()
        self.add_options(
            [Option(Content.assemble(spec.usage, "  ", (spec.description, "dim")), id=spec.name) for spec in specs]
        )
        self.set_class(bool(specs), "-visible")
