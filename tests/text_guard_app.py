"""A Textual app whose editor holds escape sequences as they came (for test_text_guard.py):
``python text_guard_app.py guarded|bare``. With ``guarded`` the app installs tui-agent's text guard."""

from __future__ import annotations

import sys

from textual.app import App, ComposeResult
from textual.widgets import Input, TextArea

from tui_agent.ui import text_guard

ESC, BEL = "\x1b", "\x07"
RAW = f"editor {ESC}]0;RAW-TITLE{BEL} and {ESC}]52;c;cHduZWQ={BEL} \x9d0;C1-TITLE\x9c end-of-text"


class Raw(App[None]):
    def compose(self) -> ComposeResult:
        yield TextArea(RAW)
        yield Input(RAW)


if __name__ == "__main__":
    if sys.argv[1:] == ["guarded"]:
        text_guard.install()
    Raw().run()
