"""memory_sql: the model reads and edits its own history with SQL, guarded by SQLite itself.

The statement runs on a dedicated READ-ONLY connection whose authorizer denies by default.
A TEMP VIEW named ``messages`` shadows the real table and hides ``memory_tool`` rows; direct
reads of ``main.messages`` are refused. An UPDATE goes through an INSTEAD OF trigger that only
collects (id, new content) pairs; this module then writes them on the app's own connection,
keeping each previous content as a revision. Nothing else can be written.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from tui_agent.core.store.models import Message, MessageRevision
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult

TIME_LIMIT_S = 3.0
ROW_LIMIT = 200
OUTPUT_LIMIT_CHARS = 32_000
VALUE_LIMIT_BYTES = 1_000_000
HIDDEN_ROLE = "memory_tool"
READABLE_TABLES = frozenset(
    {
        "conversations",
        "attachments",
        "message_revisions",
        "sqlite_master",
        "sqlite_schema",
        "sqlite_temp_master",
        "sqlite_temp_schema",
    }
)
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_offset"})
COLLECT_FUNCTION = "_memory_collect_update"
TRIGGER = "memory_collect_update"
SETUP = f"""
CREATE TEMP VIEW messages AS SELECT * FROM main.messages WHERE role IS NOT '{HIDDEN_ROLE}';
CREATE TEMP TRIGGER {TRIGGER} INSTEAD OF UPDATE OF content ON messages
BEGIN SELECT {COLLECT_FUNCTION}(OLD.id, NEW.content); END;
"""
_ACTION_NAMES = {
    getattr(sqlite3, n): n.removeprefix("SQLITE_")
    for n in dir(sqlite3)
    if n.startswith("SQLITE_")
    and isinstance(getattr(sqlite3, n), int)
    and n not in ("SQLITE_OK", "SQLITE_DENY", "SQLITE_IGNORE")
}
ALLOWED = "memory_sql allows one SELECT (or WITH ... SELECT) or one UPDATE of messages.content"


class QueryRefused(Exception):
    pass


@dataclass
class QueryOutcome:
    kind: str = "select"
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    truncated: str = ""
    updates: list[tuple[int, str]] = field(default_factory=list)


class _Guard:
    """The authorizer: deny by default, remember why."""

    def __init__(self) -> None:
        self.denied = ""
        self.wrote = False

    def __call__(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, source: str | None) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            table = (arg1 or "").lower()
            if table == "messages" and (dbname == "temp" or (source or "").lower() == "messages"):
                return sqlite3.SQLITE_OK
            if table in READABLE_TABLES:
                return sqlite3.SQLITE_OK
            return self._deny(f"reading {'main.' if table == 'messages' else ''}{arg1}")
        if action == sqlite3.SQLITE_UPDATE:
            if (arg1 or "").lower() == "messages" and (arg2 or "").lower() == "content" and dbname == "temp":
                self.wrote = True
                return sqlite3.SQLITE_OK
            return self._deny(f"updating {arg1}.{arg2} (only messages.content may change)")
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name == COLLECT_FUNCTION.lower():
                return sqlite3.SQLITE_OK if (source or "").lower() == TRIGGER else self._deny(f"function {arg2}")
            if name in DENIED_FUNCTIONS:
                return self._deny(f"function {arg2}")
            return sqlite3.SQLITE_OK
        return self._deny(f"{_ACTION_NAMES.get(action, str(action))} {arg1 or ''}".strip())

    def _deny(self, what: str) -> int:
        self.denied = self.denied or what
        return sqlite3.SQLITE_DENY


def run_query(db_path: str, query: str) -> QueryOutcome:
    """Run one statement under the guard (blocking; call it in a thread)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    try:
        outcome = QueryOutcome()
        conn.create_function(
            COLLECT_FUNCTION, 2, lambda i, c: outcome.updates.append((int(i), str(c))), deterministic=False
        )
        conn.executescript(SETUP)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_LIMIT_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        deadline = time.monotonic() + TIME_LIMIT_S
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        guard = _Guard()
        conn.set_authorizer(guard)
        try:
            cursor = conn.execute(query)
            outcome.kind = "update" if guard.wrote else "select"
            if cursor.description:
                outcome.columns = [d[0] for d in cursor.description]
                _collect(cursor, outcome)
        except sqlite3.ProgrammingError as exc:
            if "one statement" in str(exc):
                raise QueryRefused(f"refused: one statement per call ({ALLOWED})") from None
            raise QueryRefused(f"SQL error: {exc}") from None
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not authorized" in text or "prohibited" in text:
                raise QueryRefused(f"refused: {guard.denied or 'this statement'} is not allowed; {ALLOWED}") from None
            if "interrupted" in text:
                raise QueryRefused(f"stopped: the query ran longer than the {TIME_LIMIT_S:g}s time limit") from None
            if "too big" in text:
                raise QueryRefused(f"stopped: a value exceeded the {VALUE_LIMIT_BYTES:,} byte size limit") from None
            if "cannot modify messages because it is a view" in text:
                raise QueryRefused(f"refused: only messages.content may be updated; {ALLOWED}") from None
            raise QueryRefused(f"SQL error: {text}") from None
        if outcome.kind == "select" and outcome.updates:
            outcome.kind = "update"
        return outcome
    finally:
        conn.close()


def _collect(cursor: sqlite3.Cursor, outcome: QueryOutcome) -> None:
    size = 0
    while True:
        row = cursor.fetchone()
        if row is None:
            return
        if len(outcome.rows) >= ROW_LIMIT:
            outcome.truncated = (
                f"row limit reached: only the first {ROW_LIMIT} rows are shown; add LIMIT or narrow WHERE"
            )
            return
        values = [_jsonable(v) for v in row]
        size += len(json.dumps(values, ensure_ascii=False))
        if size > OUTPUT_LIMIT_CHARS:
            outcome.truncated = (
                f"output limit reached: {len(outcome.rows)} rows shown (limit {OUTPUT_LIMIT_CHARS:,} characters); "
                "select fewer columns, use substr(), or add LIMIT"
            )
            return
        outcome.rows.append(values)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    return value


def apply_updates(updates: list[tuple[int, str]]) -> list[int]:
    """Write collected updates on the app connection; every previous content becomes a revision."""
    changed: list[int] = []
    final: dict[int, str] = {}
    for message_id, content in updates:
        final[message_id] = content
    with Message._meta.database.atomic():
        for message_id, content in final.items():
            message = Message.get_or_none((Message.id == message_id) & (Message.role != HIDDEN_ROLE))
            if message is None or message.content == content:
                continue
            MessageRevision.create(message=message.id, content=message.content, reason="memory_sql UPDATE")
            Message.update(content=content).where(Message.id == message_id).execute()
            changed.append(message_id)
    return changed


class MemorySqlTool(Tool):
    name = "memory_sql"
    role = "memory_tool"
    description = (
        "Run ONE SQLite statement over the chat history: a SELECT (WITH ... SELECT allowed) to recall, "
        "or an UPDATE of messages.content to correct. Table messages(id, conversation_id, role, content, "
        "tool_name, tool_call_id, model, status, created_at); also conversations(id, title, created_at) "
        "and message_revisions(id, message_id, content, created_at). Results are limited in rows, size and time."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "One SELECT or UPDATE statement, e.g. SELECT id, content FROM messages "
                "WHERE content LIKE '%topic%' ORDER BY id DESC LIMIT 5",
            },
        },
        "required": ["query"],
    }

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"memory_sql {' '.join(str(arguments.get('query', '')).split())}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = str(arguments["query"]).strip()
        if not query:
            return ToolResult.fail("missing parameter: query (it is empty)")
        try:
            outcome = await asyncio.to_thread(run_query, str(ctx.vault.db_path), query)
        except QueryRefused as exc:
            return ToolResult.fail(str(exc))
        if outcome.kind == "select":
            data: dict[str, Any] = {
                "kind": "select",
                "columns": outcome.columns,
                "rows": outcome.rows,
                "row_count": len(outcome.rows),
            }
            if outcome.truncated:
                data["truncated"] = outcome.truncated
            return ToolResult.ok(data)
        ids = sorted({i for i, _ in outcome.updates})
        if not ids:
            return ToolResult.ok({"kind": "update", "updated": 0, "ids": []})
        if ctx.profile.sql_update_approval == "ask":
            if ctx.approve is None:
                return ToolResult.fail(
                    "UPDATE needs the user's approval (profile field sql_update_approval = ask; "
                    "headless: pass --yes); nothing was changed"
                )
            question = (
                f"{query}\n\nThis would change the content of {len(ids)} message(s): {', '.join(map(str, ids[:20]))}"
            )
            if not await ctx.approve(self.name, question):
                return ToolResult.fail("the user declined this UPDATE; nothing was changed")
        changed = await asyncio.to_thread(apply_updates, outcome.updates)
        return ToolResult.ok(
            {"kind": "update", "updated": len(changed), "ids": changed, "revisions_kept": len(changed)}
        )
