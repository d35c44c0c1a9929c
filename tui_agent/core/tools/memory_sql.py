"""memory_sql: the model reads and edits its own history with SQL, guarded by SQLite itself.

The statement runs in a worker process (``sql_worker``) on a READ-ONLY connection whose
authorizer denies by default (``sql_guard``); ``memory_tool`` rows are hidden behind a TEMP VIEW
named ``messages``. An UPDATE only collects (id, new content) pairs, counted and capped in the
worker; after the user approves a question the app computed (``sql_update``), this module
writes them on the app's own connection, keeping each previous content as a revision.

The store chooses the runner (``backends.current().memory_runner()``). On a PostgreSQL store the
same worker runs the statement through ``pg_run`` instead: parsed by
PostgreSQL's own parser (every name resolved, allow-lists), then run by the server inside a
SECURITY DEFINER function of memory_sql's own role, where no change of role is possible
(``pg_memory``), which is set up here the first time when the connected user may (else one line
says what to run). An UPDATE is previewed by a SELECT there: nothing is written before the yes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tui_agent.core.store import backends
from tui_agent.core.store.errors import StoreError
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.sql_run import Limits, Request
from tui_agent.core.tools.sql_update import UpdateBlocked, apply_updates, approval_question
from tui_agent.core.tools.sql_worker import WorkerFailed, run_in_worker
from tui_agent.core.vault import Vault

TIME_LIMIT_S = 3.0


def temp_dir(vault: Vault) -> Path:
    """Where SQLite may spill a big sort: inside the vault, never the system's /tmp."""
    return vault.root / ".tmp" / "memory_sql"


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

    def schema(self) -> dict[str, Any]:
        """The model is told which SQL the store takes (on PostgreSQL, SQLite's group_concat works too)."""
        schema = super().schema()
        try:
            dialect = backends.current().memory_runner().dialect
        except StoreError:  # no store open (`tui-agent tool --list`): the schema as written
            return schema
        if dialect != "SQLite":
            schema["function"]["description"] = self.description.replace(
                "ONE SQLite statement", f"ONE {dialect} statement (group_concat works too)"
            )
        return schema

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"memory_sql {' '.join(str(arguments.get('query', '')).split())}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = str(arguments["query"]).strip()
        if not query:
            return ToolResult.fail("missing parameter: query (it is empty)")
        limits = Limits(
            time_limit_s=TIME_LIMIT_S,
            update_max_rows=int(ctx.profile.sql_update_max_rows),
            update_max_value_bytes=int(ctx.profile.sql_update_max_value_bytes),
        )
        runner = backends.current().memory_runner()
        request = Request(str(ctx.vault.db_path), query, limits, runner=runner.module, preload=runner.preload)
        problem = await asyncio.to_thread(runner.prepare, request)
        if problem:
            return ToolResult.fail(problem)
        try:
            answer = await run_in_worker(request, temp_dir(ctx.vault))
        except WorkerFailed as exc:
            if exc.timed_out:
                return ToolResult.fail(f"stopped: the query ran longer than the {TIME_LIMIT_S:g}s time limit ({exc})")
            return ToolResult.fail(str(exc))
        if not answer.get("ok"):
            return ToolResult.fail(str(answer.get("error") or "the query failed"))
        if answer["kind"] == "select":
            data: dict[str, Any] = {
                "kind": "select",
                "columns": answer["columns"],
                "rows": answer["rows"],
                "row_count": len(answer["rows"]),
            }
            if answer.get("truncated"):
                data["truncated"] = answer["truncated"]
            return ToolResult.ok(data)
        count = int(answer["count"])
        if count == 0:
            return ToolResult.ok({"kind": "update", "updated": 0, "ids": []})
        if count > limits.update_max_rows:
            return ToolResult.fail(
                f"refused: this UPDATE would change {count:,} messages; the limit is {limits.update_max_rows} "
                "per UPDATE (profile field sql_update_max_rows); narrow the WHERE clause. Nothing was changed"
            )
        if ctx.profile.sql_update_approval == "ask":
            if ctx.approve is None:
                return ToolResult.fail(
                    "UPDATE needs the user's approval (profile field sql_update_approval = ask; "
                    "headless: pass --yes); nothing was changed"
                )
            if not await ctx.approve(self.name, approval_question(answer)):
                return ToolResult.fail("the user declined this UPDATE; nothing was changed")
        updates = [(int(i), str(c)) for i, c in answer["updates"]]
        try:
            changed = await asyncio.to_thread(apply_updates, updates)
        except UpdateBlocked as exc:
            return ToolResult.fail(str(exc))
        return ToolResult.ok(
            {"kind": "update", "updated": len(changed), "ids": changed, "revisions_kept": len(changed)}
        )
