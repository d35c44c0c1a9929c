"""Command palette: every app action, and full-text history search that jumps to the message."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui_agent.ui.history_search import HistorySearch

__all__ = ["ACTIONS", "HELP_EXTRA", "AgentCommands", "HistorySearch", "history_search"]


def history_search() -> type[HistorySearch]:
    """The history search provider, imported when the palette first opens (Textual calls a provider
    given as a function then): the search and its readers are not the first paint's (5 dataclasses)."""
    from tui_agent.ui.history_search import HistorySearch

    return HistorySearch


def __getattr__(name: str) -> Any:  # ``commands.HistorySearch`` still names the provider
    if name == "HistorySearch":
        return history_search()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ACTIONS = [
    ("New conversation", "new_conversation", "Start an empty conversation (Ctrl+N)"),
    ("Toggle sidebar", "toggle_sidebar", "Profile fields and conversations (Ctrl+B)"),
    (
        "Choose a model",
        "choose_model",
        "The server's models: the window each really runs with, vision/tools/thinking; sets chat or vision model",
    ),
    ("Expand or collapse all tool results", "toggle_tools", "Ctrl+O"),
    ("Show or hide all thinking blocks", "toggle_thinking", "The model's reasoning above its replies (Ctrl+G)"),
    ("Attach an image", "attach", "Pick a file or type a URL (Ctrl+T)"),
    (
        "Open image full size",
        "open_image",
        "The focused or newest image, full size in the app; in a browser, a new tab (F3)",
    ),
    ("Download image", "download_image", "The focused or newest image, as a file (F4)"),
    ("Edit this picture", "edit_picture", "/edit with the focused or newest picture in the composer (e on a picture)"),
    ("Browse images in a browser tab", "open_gallery", "This conversation's images, full size (tui-agent serve)"),
    ("Cancel the running turn", "cancel_turn", "Esc"),
    ("Retry the failed turn", "retry_turn", "Send the last message again after an error (Ctrl+R)"),
    ("Show the log", "show_log", "logs/agent.log, live (Ctrl+L)"),
    ("Rename conversation", "rename_conversation", "Give this conversation a title"),
    ("Delete conversation", "delete_conversation", "Asks for confirmation"),
    ("Select messages", "select_messages", "Move a cursor through the messages (Up on an empty composer)"),
    ("Message actions", "message_menu", "Actions for the message under the cursor, or the newest (Enter)"),
    ("Copy message", "copy_message", "Its Markdown source: OSC 52, tmux, system clipboard (c)"),
    ("Copy to prompt", "copy_to_prompt", "Put the message's text into the composer (p)"),
    ("Regenerate reply", "regenerate", "Answer again; earlier answers stay as alternatives (r)"),
    ("Edit and resend", "edit_message", "Edit one of your messages; the conversation branches (e)"),
    ("Next alternative or branch", "alternative(1)", "Right on a message with ◀ n / N ▶"),
    ("Previous alternative or branch", "alternative(-1)", "Left on a message with ◀ n / N ▶"),
    ("Export conversation as Markdown", "export_markdown", "Into the vault's exports/ with its images"),
    ("Export conversation as JSON", "export_json", "Every stored field; tui-agent history import reads it"),
    ("Help", "help", "Slash commands and key bindings (F1)"),
    ("Trust this vault", "trust_vault", "A ./jj_vault: let it run its MCP servers, image command and API key"),
    ("Approve changed settings", "approve_settings", "Settings changed in the shared store: approve them here"),
]

# /help and F1: the keys that are not the app's bindings (those are listed from AgentApp.BINDINGS).
HELP_EXTRA = (
    "ctrl+p     Command palette (also: search history)\n"
    "left/right Previous/next image (carousel focused)\n"
    "o          Open the image full size\n"
    "e          Edit this picture: /edit media/... in the composer\n"
    "\nMessages (Up on an empty composer, or Alt+Up, or a click)\n"
    "up/down    Move the message cursor; down past the last returns to the composer\n"
    "enter      The message's actions (copy a code block, export, ...)\n"
    "c          Copy the message (its Markdown source)\n"
    "p          Copy it into the composer\n"
    "r          Regenerate a reply (earlier answers stay: left/right)\n"
    "e          Edit one of your messages and resend it (the old branch stays)\n"
    "left/right Previous/next alternative or branch\n"
    "escape     Back to the composer (also: stop editing)\n"
    "ctrl+up    Recall earlier messages into the composer"
)


class AgentCommands(Provider):
    async def discover(self) -> Hits:
        for title, action, help_text in ACTIONS:
            yield DiscoveryHit(title, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, action, help_text in ACTIONS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.app.run_action, action), help=help_text)
