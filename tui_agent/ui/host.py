"""What the app's parts need of the app, as Protocols (a leaf: nothing here imports the app).

The turn (``turn_runner``, ``turn_view``), the send queue, the MCP control and the history search
are typed by these, never by ``AgentApp``, which builds them: attributes go down, messages go up
(Textual's guide), and no module imports back the app that imports it (tests/core/test_import_graph.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.app import App
    from textual.css.query import DOMQuery
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.widget import AwaitMount, Widget
    from textual.worker import Worker

    from tui_agent.core.llm import LLMClient
    from tui_agent.core.store.models import Profile
    from tui_agent.core.tools.registry import ToolRegistry
    from tui_agent.core.vault import Vault
    from tui_agent.ui.widgets.chat_log import ChatLog
    from tui_agent.ui.widgets.composer import Composer
    from tui_agent.ui.widgets.status import StatusLine

W = TypeVar("W", bound="Widget")


class Notifier(Protocol):
    def notify(
        self,
        message: str,
        *,
        title: str = ...,
        severity: SeverityLevel = ...,
        timeout: float | None = ...,
        markup: bool = ...,
    ) -> None: ...


class McpHost(Notifier, Protocol):
    """What ``McpControl`` needs: the vault, tools and profile its servers start with; a way out."""

    @property
    def vault(self) -> Vault: ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def profile(self) -> Profile: ...
    def exit(self) -> None: ...
    def query(self, selector: str) -> DOMQuery[Widget]: ...


class QueueHost(Notifier, Protocol):
    """What ``SendQueue`` needs (the conversation view): the conversation on screen, the composer,
    a place for its line."""

    @property
    def conversation_id(self) -> int | None: ...
    @property
    def composer(self) -> Composer: ...
    def post_message(self, message: Message) -> bool: ...
    def query(self, selector: str) -> DOMQuery[Widget]: ...
    def mount(self, *widgets: Widget, before: Widget | None = None) -> AwaitMount: ...


class SearchHost(Protocol):
    """What a history-search hit does: open its conversation at the message."""

    async def jump_to_message(self, conversation_id: int, message_id: int) -> None: ...


class TurnQueue(Protocol):
    async def turn_ended(self, conversation_ids: Iterable[int | None], status: str | None) -> None: ...


class TurnHost(Protocol):
    """What one turn on screen needs (``turn_runner.run_turn`` and ``TurnView``): the conversation view."""

    pending_attachments: list[str]
    turns: dict[int | None, Worker[Any]]

    @property
    def vault(self) -> Vault: ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def conversation_id(self) -> int | None: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def chat_log(self) -> ChatLog: ...
    @property
    def composer(self) -> Composer: ...
    @property
    def status_line(self) -> StatusLine: ...
    @property
    def send_queue(self) -> TurnQueue: ...

    async def client_ready(self) -> None:
        """The client is built (a turn waits for the preload: two threads must not import openai at once)."""

    def llm_client(self, profile: Profile | None = None) -> LLMClient: ...
    async def approve(self, tool: str, question: str) -> bool: ...
    async def before_turn(self) -> None:
        """The MCP servers the profile names are started (their tools are in the registry)."""

    def turn_ended(self) -> None:
        """The idle collector may run once the app is quiet (gc_tuning.IdleCollector)."""

    def first_words_shown(self) -> None: ...
    async def reload_profile(self) -> Profile:
        """The active profile read again (on the store's thread), once a turn."""

    def store_away(self, kept: str | None, failure: str) -> None:
        """The store's server is away: ``kept`` (a message not stored) is sent once it answers."""

    async def conversation_started(self, conversation_id: int, title: str) -> None: ...
    async def show_title(self, stored: str) -> None:
        """The conversation's title in the header and the sidebar (``stored``: as the turn stored it)."""

    def show_pending_attachments(self) -> None: ...
    def call_after_refresh(self, callback: Callable[..., object], *args: Any) -> bool: ...
    def query_one(self, selector: type[W]) -> W: ...


@dataclass(frozen=True)
class ViewDeps:
    """What the conversation view gets from the app: narrow callables, never the app (ui/app.py
    builds it). Attributes go down; what the view tells the app goes through these."""

    vault: Vault
    clock: Callable[[], float]
    profile: Callable[[], Profile]  # as last read
    reload_profile: Callable[[], Awaitable[Profile]]  # read again (on the store's thread)
    registry: Callable[[], ToolRegistry]
    llm_client: Callable[[Profile | None], LLMClient]
    client_ready: Callable[[], Awaitable[None]]  # waits for the preload (ui/startup)
    before_turn: Callable[[], Awaitable[None]]  # the MCP servers started, their tools registered
    approve: Callable[[str, str], Awaitable[bool]]  # (tool, question): the approval dialog
    first_words_shown: Callable[[], None]  # what waited for the first reply's words comes now
    input_seen: Callable[[], None]  # the idle collector waits for a pause in typing
    turn_ended: Callable[[], None]  # the idle collector may run once the app is quiet
    help_keys: Callable[[], str]  # the key bindings, one a line (for /help and F1)
    show_title: Callable[[str, bool], Awaitable[None]]  # (title, always): header; sidebar list if changed


class OnConversation(Notifier, Protocol):
    """The conversation on screen, its chat log and the app (what every part of the view needs)."""

    @property
    def conversation_id(self) -> int | None: ...
    @property
    def chat_log(self) -> ChatLog: ...
    @property
    def app(self) -> App[Any]: ...


class ActionsHost(OnConversation, Protocol):
    """What the message actions need (the conversation view)."""

    editing: int | None
    turns: dict[int | None, Worker[Any]]

    @property
    def vault(self) -> Vault: ...
    @property
    def composer(self) -> Composer: ...
    @property
    def status_line(self) -> StatusLine: ...
    def run_worker(self, work: Any, *, group: str = ..., exit_on_error: bool = ...) -> Worker[Any]: ...
    def run_turn(
        self,
        conversation_id: int | None,
        text: str,
        attachments: list[str],
        *,
        edit_of: int | None = None,
        regenerate: int | None = None,
    ) -> Worker[None]: ...
    async def run_action(self, action: str) -> None: ...


class ImagesHost(OnConversation, Protocol):
    """What the image actions need (the conversation view)."""

    @property
    def vault(self) -> Vault: ...
    @property
    def screen(self) -> Screen[Any]: ...
    @property
    def composer(self) -> Composer: ...


class ConversationOps(OnConversation, Protocol):
    """What renaming, deleting and marking a found message need (the conversation view)."""

    turns: dict[int | None, Worker[Any]]

    @property
    def deps(self) -> ViewDeps: ...
    def title(self, stored: str | None = None) -> str: ...
    def call_after_refresh(self, callback: Callable[..., object], *args: Any, **kwargs: Any) -> bool: ...
    async def open_conversation(
        self, conversation_id: int | None, *, until_id: int | None = None, remember: bool = True
    ) -> None: ...
