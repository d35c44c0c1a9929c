"""The sidebar: the profile picker with every field editable and validated in place, and the
conversation list (new, switch, rename, delete)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, ListItem, ListView, Select, Static, TextArea

from tui_agent.core import profiles
from tui_agent.core.store import history, worker
from tui_agent.core.store.errors import STORE_FAILURES
from tui_agent.core.store.models import Conversation, McpServer, Profile
from tui_agent.core.textsafe import visible
from tui_agent.ui.errors import store_unavailable
from tui_agent.ui.widgets.host import host_of
from tui_agent.ui.widgets.sidebar_messages import ConversationsAction, ConversationSelected, ProfileChanged

if TYPE_CHECKING:
    from tui_agent.core.mcp.config import ServerConfig


@dataclass
class SidebarData:
    """What the sidebar shows, read in one call on the store's thread (:func:`read_sidebar`)."""

    names: list[str]
    active: Profile
    conversations: list[Conversation]
    servers: list[ServerConfig] | None  # None: no MCP server was ever added (no section)


def read_sidebar() -> SidebarData:
    active = profiles.active_profile()
    names = [p.name for p in Profile.select(Profile.name).order_by(Profile.name)]
    servers = None
    if McpServer.select().exists():  # the MCP section appears once a server is added
        from tui_agent.core.mcp import config as mcp_config

        servers = mcp_config.list_servers(active)
    return SidebarData(names, active, history.list_conversations(), servers)


def _use_profile(name: str) -> Profile:
    profiles.use_profile(name)
    return profiles.active_profile()


class ProfileEditor(VerticalScroll):
    """Each field saves when Enter is pressed or focus leaves it, only if valid."""

    DEFAULT_CSS = """
    ProfileEditor .field-multiline { height: 5; }
    """

    Changed = ProfileChanged

    def __init__(self, names: list[str], active: Profile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.names = names
        self.active = active  # as last read: the fields show it

    def compose(self) -> ComposeResult:
        yield Label("Profile", classes="sidebar-title")
        names, active = self.names, self.active
        yield Select([(visible(n), n) for n in names], value=active.name, allow_blank=False, id="profile-select")
        yield Button("Choose a model…", id="choose-model", compact=True)
        for spec in profiles.FIELDS:
            yield Label(spec.name, classes="field-label")
            value = _shown(active, spec.name)
            if spec.multiline:  # system_prompt, memory: several lines; saved when focus leaves
                area = TextArea(value, id=f"field-{spec.name}", soft_wrap=True, compact=True, classes="field-multiline")
                area.tooltip = spec.help
                yield area
            else:
                yield Input(value, id=f"field-{spec.name}", tooltip=spec.help)
            yield Static("", id=f"error-{spec.name}", classes="field-error", markup=False)

    def on_mount(self) -> None:
        if not host_of(self.app).live_motion:
            for field in self.query(Input):
                field.cursor_blink = False
            for area in self.query(TextArea):
                area.cursor_blink = False

    def refresh_fields(self, active: Profile) -> None:
        self.active = active
        for spec in profiles.FIELDS:
            field = self.query_one(f"#field-{spec.name}")
            if isinstance(field, TextArea):
                with field.prevent(TextArea.Changed):
                    field.load_text(_shown(active, spec.name))
            elif isinstance(field, Input):
                with field.prevent(Input.Changed):
                    field.value = _shown(active, spec.name)
            field.remove_class("-invalid")
            self.query_one(f"#error-{spec.name}", Static).update("")

    @on(Select.Changed, "#profile-select")
    async def _switch(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.active.name:
            try:
                active = await worker.run(_use_profile, event.value)
            except STORE_FAILURES as exc:
                self.notify(store_unavailable(exc), severity="error")
                return
            self.refresh_fields(active)
            self.post_message(self.Changed())

    @on(Button.Pressed, "#choose-model")
    async def _choose_model(self) -> None:
        await self.app.run_action("choose_model")

    @on(Input.Submitted)
    async def _submitted(self, event: Input.Submitted) -> None:
        await self.save_field(event.input)

    @on(Input.Blurred)
    async def _blurred(self, event: Input.Blurred) -> None:
        await self.save_field(event.input)

    async def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if isinstance(event.widget, TextArea):
            await self.save_field(event.widget)

    async def save_field(self, field: Input | TextArea) -> bool:
        """Saved on the store's thread if it changed and is valid."""
        name = (field.id or "").removeprefix("field-")
        error = self.query_one(f"#error-{name}", Static)
        profile = self.active
        value = field.text if isinstance(field, TextArea) else field.value
        if value == _shown(profile, name):  # unchanged (as shown: controls made visible)
            field.remove_class("-invalid")
            error.update("")
            return True
        try:
            await worker.run(profiles.set_field, profile, name, value)
        except profiles.ProfileError as exc:
            field.add_class("-invalid")
            error.update(visible(str(exc)))
            return False
        except STORE_FAILURES as exc:  # the server away: the field keeps what was typed
            error.update(store_unavailable(exc))
            return False
        field.remove_class("-invalid")
        error.update("")
        self.notify(f"{name} saved", timeout=2)
        self.post_message(self.Changed())
        return True


class ConversationList(Vertical):
    Selected = ConversationSelected
    Action = ConversationsAction

    def __init__(self, conversations: list[Conversation], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.first: list[Conversation] | None = conversations  # read with the sidebar

    def compose(self) -> ComposeResult:
        yield Label("Conversations", classes="sidebar-title")
        with Horizontal(classes="conversation-buttons"):
            yield Button("New", id="conv-new", compact=True)
            yield Button("Rename", id="conv-rename", compact=True)
            yield Button("Delete", id="conv-delete", compact=True, variant="error")
        yield ListView(id="conversation-list")

    async def on_mount(self) -> None:
        await self.reload(host_of(self.app).conversation_id)

    async def reload(self, current: int | None) -> None:
        """The list again (read on the store's thread; the one read with the sidebar at first)."""
        conversations, self.first = self.first, None
        if conversations is None:
            try:
                conversations = await worker.run(history.list_conversations)
            except STORE_FAILURES as exc:
                self.notify(store_unavailable(exc), severity="error")
                return
        view = self.query_one(ListView)
        await view.clear()
        items = []
        index = None
        for position, conversation in enumerate(conversations):
            title = conversation.title or f"Conversation {conversation.id}"
            items.append(ListItem(Label(visible(title), markup=False), id=f"conversation-{conversation.id}"))
            if conversation.id == current:
                index = position
        await view.extend(items)
        view.index = index

    @on(ListView.Selected, "#conversation-list")
    def _selected(self, event: ListView.Selected) -> None:
        if event.item.id:
            self.post_message(self.Selected(int(event.item.id.removeprefix("conversation-"))))

    @on(Button.Pressed, "#conv-new, #conv-rename, #conv-delete")
    def _button(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.Action((event.button.id or "").removeprefix("conv-")))


class ThemePicker(Vertical):
    """Textual's built-in themes; the choice is remembered (see ui.themes)."""

    def compose(self) -> ComposeResult:
        from tui_agent.ui.themes import theme_names

        yield Label("Theme", classes="sidebar-title")
        names = theme_names(self.app)
        current = self.app.theme if self.app.theme in names else names[0]
        yield Select([(n, n) for n in names], value=current, allow_blank=False, id="theme-select")

    @on(Select.Changed, "#theme-select")
    def _chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.app.theme:
            self.app.theme = event.value


class Sidebar(Vertical):
    def __init__(self, data: SidebarData, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = data

    def compose(self) -> ComposeResult:
        data = self.data
        yield ConversationList(data.conversations, id="conversations")
        yield ThemePicker(id="theme-picker")
        if data.servers is not None:  # the MCP section appears once a server is added
            from tui_agent.ui.widgets.mcp_list import McpServerList

            yield McpServerList(data.servers, id="mcp-servers")
        yield ProfileEditor(data.names, data.active, id="profile-editor")


def _shown(profile: Profile, name: str) -> str:
    """A field's value as the sidebar shows it: a profile may come from a vault someone else made,
    and a TextArea or an Input would draw its control characters raw. Saved back only if edited."""
    return visible(profiles.field_as_text(profile, name))
