"""memory_sql's names on PostgreSQL: its role, its schema of views and their columns, its function.

What ``pg_run`` and ``pg_guard`` need inside the memory_sql worker, in a module of its own: the
worker, started for each statement, then does not load the store (peewee, the models), which
``core/store/pg_memory.py`` (the set-up itself, which uses these names) is part of.
"""

from __future__ import annotations

ROLE = "tui_agent_memory"
SCHEMA = "tui_agent_memory"
HIDDEN_ROLE = "memory_tool"
#: Bumped when the views, grants or function of pg_memory.setup_sql change: an older set-up is then run again.
#: v2: the statement runs inside ``run_select`` (SECURITY DEFINER); the role may write nothing.
VERSION = 2
MARK = f"tui-agent memory_sql v{VERSION}"

MESSAGE_COLUMNS = (
    "id, conversation_id, role, content, tool_name, tool_call_id, tool_arguments, tool_calls, model, "
    "status, created_at, prompt_tokens, completion_tokens, parent_id, reasoning"
)
#: What the model's SQL may name (unqualified: the search_path is the schema above), and their columns.
VIEW_COLUMNS: dict[str, tuple[str, ...]] = {
    "messages": tuple(MESSAGE_COLUMNS.replace(",", " ").split()),
    "conversations": ("id", "title", "created_at", "updated_at", "leaf_id"),
    "message_revisions": ("id", "message_id", "content", "reason", "created_at"),
    "attachments": ("id", "message_id", "position", "path", "mime"),
}
VIEWS = tuple(VIEW_COLUMNS)
#: The function the statement runs in: (statement, most rows) -> (n, row_json); n = 0 is the header.
RUN_SELECT = f"{SCHEMA}.run_select"


class SetupMissing(Exception):
    """memory_sql's role or views are not there (or are older); the text says what to run."""
