"""Limits shared by the core and the UI, in a module that imports nothing (the UI reads them at
start-up without loading the turn loop)."""

MAX_MESSAGE_CHARS = 200_000  # one message typed or pasted; longer text goes in as a file


def message_too_long(text: str) -> str | None:
    """Why ``text`` cannot be sent as one message (None: it can). The one rule for the TUI's
    composer, the turn loop and ``tui-agent ask``."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return None
    return (
        f"message too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}): "
        "nothing was sent; attach long text as a file or shorten it"
    )
