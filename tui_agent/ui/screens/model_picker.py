"""The model picker: the server's models with the window each really runs with and what each can
do; Enter or c makes one the chat model, v the vision model. The server is asked in a worker
thread; the list shows what the cache knew until it answers."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tui_agent.core.models import catalog, listing
from tui_agent.core.models.probe import ServerModels
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible
from tui_agent.core.vault import Vault

Choice = tuple[str, str]  # (profile field, model name)


class ModelPicker(ModalScreen[Choice | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="models.cancel"),
        Binding("c", "use('chat_model')", "Use for chat", id="models.chat"),
        Binding("v", "use('vision_model')", "Use for vision", id="models.vision"),
    ]
    DEFAULT_CSS = """
    ModelPicker { align: center middle; }
    ModelPicker > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%; }
    ModelPicker OptionList { height: auto; max-height: 20; }
    ModelPicker .model-warnings { color: $warning; }
    """

    def __init__(self, profile: Profile, vault: Vault) -> None:
        super().__init__()
        self.profile = profile
        self.vault = vault
        self.found: ServerModels | None = catalog.cached(profile.base_url)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Models", id="models-title", classes="dialog-title", markup=False)
            yield Static("asking the server…", id="models-status", markup=False)
            yield OptionList(id="models-list")
            yield Static("", id="models-warnings", classes="model-warnings", markup=False)
            yield Static(
                "Enter or c: use for chat · v: use for vision · Esc: close", classes="dialog-help", markup=False
            )

    def on_mount(self) -> None:
        if self.found is not None:
            self.show(self.found)
        self.query_one(OptionList).focus()
        self.ask_server()

    @work(thread=True, exclusive=True, exit_on_error=False, group="models")
    def ask_server(self) -> None:
        found = catalog.refresh(self.profile, self.vault)
        self.app.call_from_thread(self.show, found)

    def show(self, found: ServerModels) -> None:
        self.found = found
        table = listing.rows(self.profile, found)
        self.query_one("#models-title", Static).update(listing.heading(found))
        status = visible(found.error) if found.error else f"{len(table)} models"
        self.query_one("#models-status", Static).update(status)
        options = self.query_one(OptionList)
        highlighted = options.highlighted
        options.clear_options()
        width = max([5, *(len(r.model) for r in table)])
        for index, row in enumerate(table):
            used = f"  [{row.used_for}]" if row.used_for else ""
            text = f"{row.model:<{width}}  {row.window:>9}  {row.can}{used}"
            options.add_option(Option(text, id=str(index)))
        if table:
            options.highlighted = min(highlighted or 0, len(table) - 1)
        self.query_one("#models-warnings", Static).update("\n".join(listing.warnings(self.profile, found)))

    def chosen(self) -> str | None:
        options = self.query_one(OptionList)
        if self.found is None or options.highlighted is None or options.highlighted >= len(self.found.models):
            return None
        return self.found.models[options.highlighted].id

    @on(OptionList.OptionSelected)
    def _selected(self) -> None:
        self.action_use("chat_model")

    def action_use(self, field: str) -> None:
        name = self.chosen()
        if name is not None:
            self.dismiss((field, name))

    def action_cancel(self) -> None:
        self.dismiss(None)
