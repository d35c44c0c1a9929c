"""Friendly error text for the red error card; the raw details go to logs/agent.log."""

from __future__ import annotations

from pathlib import Path

from tui_agent.core.textsafe import visible

HINTS = {
    "connection": "Start the server (Ollama: `ollama serve`), set OPENAI_API_KEY / OPENAI_BASE_URL and restart, "
    "or edit base_url in the sidebar (Ctrl+B).",
    "tls": "If you trust this server, point SSL_CERT_FILE at a CA bundle that holds its certificate and "
    "restart; otherwise check base_url in the sidebar (Ctrl+B).",
    "auth": "Check the key: the profile's api_key_env names the environment variable that holds it (sidebar, Ctrl+B).",
    "model": "Check chat_model and vision_model in the sidebar (Ctrl+B); the server does not know this model.",
    "timeout": "The model took too long. Try again, or raise request_timeout_s in the sidebar.",
    "rate_limit": "The provider is rate limiting you. Wait a moment and send again.",
    "server": "The provider had a server error. Send again in a moment.",
    "content_policy": "Rephrase the request.",
    "max_rounds": "The model kept calling tools. Ask again, or raise max_tool_rounds in the sidebar.",
    "attachment": "Check the file or URL: it must be a PNG, JPEG, GIF or WebP image.",
    "usage": "Type /help for the list of commands.",
    "store": "What was saved before is still there. Fix the cause above, then send again.",
    "bad_request": "The message above is the server's own; check the profile's model and fields (Ctrl+B).",
    "bad_stream": "The partial reply is kept; send again, or try another model or server.",
    "retry": "Ctrl+R sends a turn again after it failed or was cancelled.",
    "untrusted": "Trust it from the command palette (Ctrl+P: Trust this vault) or with the command above, "
    "then send again.",
    "unapproved": "Check the value, then approve it from the command palette (Ctrl+P: Approve changed settings) "
    "or with `tui-agent approve`, and send again.",
}

TITLES = {
    "connection": "Can't reach the model",
    "tls": "The server's certificate is not trusted",
    "auth": "The API key was refused",
    "model": "Unknown model",
    "timeout": "The model did not answer in time",
    "rate_limit": "Rate limited",
    "server": "The provider failed",
    "content_policy": "Blocked by the content policy",
    "max_rounds": "Stopped a tool loop",
    "attachment": "Can't attach that",
    "usage": "Unknown command",
    "store": "The vault's database failed",
    "store_away": "The database server is away",
    "bad_request": "The server refused the request",
    "bad_stream": "The server sent something unexpected",
    "retry": "Nothing to retry",
    "untrusted": "This vault is not trusted yet",
    "unapproved": "Changed on another machine: not approved here",
}


def cut_by_outage(kept_in: str | None) -> str:
    """The one line of a turn the store's server cut after the user's message was stored (a
    message not stored yet shows no card: it waits in the composer and the status line names the
    server, store_outage.py): nothing is sent by itself, Ctrl+R asks again. The server and the
    driver's words are in the status line and the log (Ctrl+L)."""
    if kept_in:
        kept = Path(kept_in)
        return f"✗ Reply cut, database away: kept in {kept.parent.name}/{kept.name}; Ctrl+R asks again"
    return "✗ No reply, database away: your message is stored; Ctrl+R asks again"


def store_unavailable(exc: BaseException) -> str:
    """One line for a store call that failed (the server away, the disk full...), naming where."""
    from tui_agent.core.store.errors import store_failure_message

    return visible(store_failure_message(exc) or f"{exc.__class__.__name__}: {exc}")


def store_failure(exc: BaseException) -> tuple[str, str] | None:
    """(kind, message) for a failure of the store (``store_away``: its server is away), else None."""
    from tui_agent.core.store.errors import STORE_FAILURES, describe, is_unreachable

    if not isinstance(exc, STORE_FAILURES):
        return None
    failure = describe(exc)
    return ("store_away" if is_unreachable(failure) else "store"), str(failure)


def store_where() -> str:
    """The store the app uses, as messages name it (a file, or a server and database)."""
    from tui_agent.core.store.errors import bound_path

    return bound_path()


def friendly_title(kind: str) -> str:
    return TITLES.get(kind, "Something went wrong")


def friendly(kind: str, message: str, *, hint: str | None = None) -> str:
    """The card's text; ``hint``: another kind's hint than ``kind``'s own."""
    title = friendly_title(kind)
    hint = HINTS.get(hint or kind, "Details are in the log (Ctrl+L).")
    return f"✗ {title}\n{message}\n{hint}"


def setup_text(base_url: str, chat_model: str) -> str:
    """The first-run card; the model to pull is the one the profile asks for (``chat_model``)."""
    return (
        f"No model answers at {base_url}.\n"
        "To start chatting, do one of these:\n"
        "  • export OPENAI_API_KEY=... (and OPENAI_BASE_URL for another provider), then restart tui-agent\n"
        f"  • start Ollama: ollama serve, then ollama pull {visible(chat_model)}\n"
        "  • open the sidebar (Ctrl+B) and edit base_url, api_key_env and chat_model"
    )
