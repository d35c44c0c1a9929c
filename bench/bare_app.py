"""The floor every figure is compared with: a bare Textual app (Header, TextArea, Footer)."""

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, TextArea


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield TextArea(placeholder="Message (Enter sends, Ctrl+J newline, / for commands)")
        yield Footer()


if __name__ == "__main__":
    BareApp().run()
