"""One guarded statement on a read-only connection (runs inside the memory_sql worker process).

Answers a JSON-able dict: ``{"ok": true, "kind": "select", ...}``, ``{"ok": true, "kind":
"update", "count": N, "updates": [[id, content], ...], "preview": [...]}`` or ``{"ok": false,
"error": "..."}``. An UPDATE writes nothing here: an INSTEAD OF trigger hands each (id, new
content) to ``_Collector``, which counts every row but keeps at most the cap, so a huge UPDATE
costs one value of memory at a time.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui_agent.core.tools.sql_guard import (
    ALLOWED,
    COLLECT_FUNCTION,
    HIDING_TABLES,
    Guard,
    QueryRefused,
    precheck,
    refusal,
    setup_script,
    tokens,
)


@dataclass
class Limits:
    time_limit_s: float = 3.0
    max_rows: int = 200
    output_chars: int = 32_000
    value_bytes: int = 1_000_000
    like_pattern_bytes: int = 2_000
    sql_bytes: int = 100_000
    update_max_rows: int = 50
    update_max_value_bytes: int = 65_536
    preview_rows: int = 5
    preview_chars: int = 200
    cache_kib: int = 8_192
    heap_bytes: int = 256 * 1024 * 1024
    memory_bytes: int = 1024 * 1024 * 1024
    temp_bytes: int = 512 * 1024 * 1024


@dataclass
class Request:
    db_path: str
    query: str
    limits: Limits = field(default_factory=Limits)
    #: A PostgreSQL store: {"connect": psycopg's keyword arguments, "where": its name} (see pg_run).
    postgres: dict[str, Any] | None = None
    #: The module whose ``run_guarded(request)`` the worker runs, and the modules it loads before
    #: its limits start: the store's memory runner chose them (store/backends).
    runner: str = "tui_agent.core.tools.sql_run"
    preload: tuple[str, ...] = ()


class _Collector:
    """The UPDATE sink: counts rows, keeps the first ``cap``, refuses blobs and oversized text."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.count = 0
        self.kept: dict[int, str] = {}
        self.problem = ""

    def __call__(self, message_id: Any, old: Any, content: Any) -> None:
        if isinstance(content, str) and content == old:
            return  # unchanged: nothing to write, nothing to ask
        if isinstance(content, bytes):
            self.problem = (
                f"refused: the new content of message {message_id} is a blob ({len(content):,} bytes); "
                "messages.content must be text (zeroblob, randomblob and x'..' are not allowed)"
            )
        elif content is None:
            self.problem = f"refused: the new content of message {message_id} is NULL; messages.content must be text"
        else:
            text = content if isinstance(content, str) else str(content)
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > self.limits.update_max_value_bytes:
                self.problem = (
                    f"refused: the new content of message {message_id} is {size:,} bytes; the limit is "
                    f"{self.limits.update_max_value_bytes:,} bytes (profile field sql_update_max_value_bytes)"
                )
            else:
                self.count += 1
                if self.count <= self.limits.update_max_rows:
                    self.kept[int(message_id)] = text
                return
        raise ValueError(self.problem)


def run_guarded(request: Request) -> dict[str, Any]:
    try:
        return _run(request)
    except QueryRefused as exc:
        return {"ok": False, "error": str(exc)}
    except sqlite3.Error as exc:
        return {"ok": False, "error": f"cannot read the history database: {exc}"}


def _run(request: Request) -> dict[str, Any]:
    limits = request.limits
    conn = sqlite3.connect(f"{Path(request.db_path).absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        token = secrets.token_hex(8)
        secret_views = {table: f"{table}_visible_{token}" for table in HIDING_TABLES}
        protected = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
        precheck(request.query, [*protected, *HIDING_TABLES, *secret_views.values()])
        collector = _Collector(limits)
        conn.create_function(COLLECT_FUNCTION, 3, collector, deterministic=False)
        # before the temp objects: changing temp_store drops the TEMP database
        for pragma in (
            "temp_store = FILE",
            f"cache_size = -{limits.cache_kib}",
            f"hard_heap_limit = {limits.heap_bytes}",
        ):
            conn.execute(f"PRAGMA {pragma}")
        conn.executescript(setup_script(secret_views))
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.value_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, limits.like_pattern_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, limits.sql_bytes)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        deadline = time.monotonic() + limits.time_limit_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        guard = Guard(secret_views)
        conn.set_authorizer(guard)
        answer: dict[str, Any] = {"ok": True, "kind": "select", "columns": [], "rows": [], "truncated": ""}
        try:
            cursor = conn.execute(request.query)
            if cursor.description:
                answer["columns"] = [d[0] for d in cursor.description]
                _collect(cursor, answer, limits)
        except (sqlite3.DatabaseError, sqlite3.ProgrammingError, MemoryError) as exc:
            raise QueryRefused(_explain(exc, guard, collector, request)) from None
        if guard.wrote or collector.count:
            conn.set_authorizer(None)
            conn.set_progress_handler(None, 0)
            return {"ok": True, "kind": "update", "count": collector.count, **_preview(conn, collector, limits)}
        return answer
    finally:
        conn.close()


def _explain(exc: BaseException, guard: Guard, collector: _Collector, request: Request) -> str:
    text = str(exc)
    limits = request.limits
    if collector.problem:
        return collector.problem
    if isinstance(exc, MemoryError) or "out of memory" in text:
        return "stopped: the query needed more memory than memory_sql allows; narrow it or add LIMIT"
    if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in text:
        return f"refused: one statement per call ({ALLOWED})"
    if "not authorized" in text or "prohibited" in text:
        return refusal(guard, request.query)
    if "interrupted" in text:
        return f"stopped: the query ran longer than the {limits.time_limit_s:g}s time limit"
    if "too big" in text:
        return f"stopped: a value exceeded the {limits.value_bytes:,} byte size limit"
    if "LIKE or GLOB pattern too complex" in text:
        return f"refused: a LIKE or GLOB pattern is longer than {limits.like_pattern_bytes:,} bytes"
    if "cannot modify messages because it is a view" in text:
        words = {tok.word for tok in tokens(request.query) if tok.kind == "name" and not tok.quoted}
        if "delete" in words:
            return f"refused: DELETE FROM messages is not allowed; {ALLOWED}"
        if words & {"insert", "replace"}:
            return f"refused: INSERT INTO messages is not allowed; {ALLOWED}"
        return f"refused: only messages.content may be updated; {ALLOWED}"
    if "disk is full" in text or "disk I/O error" in text:
        return f"stopped: the query needed more than {limits.temp_bytes // 2**20} MB of temporary space; narrow it"
    return f"SQL error: {text}"


def _preview(conn: sqlite3.Connection, collector: _Collector, limits: Limits) -> dict[str, Any]:
    preview = []
    for message_id, new in list(collector.kept.items())[: limits.preview_rows]:
        row = conn.execute(
            "SELECT role, substr(content, 1, ?), length(content) FROM main.messages WHERE id = ?",
            (limits.preview_chars, message_id),
        ).fetchone()
        if row is not None:
            preview.append([message_id, row[0], row[1], row[2], new[: limits.preview_chars], len(new)])
    updates = [] if collector.count > limits.update_max_rows else [[i, c] for i, c in collector.kept.items()]
    return {"updates": updates, "ids": list(collector.kept)[: limits.update_max_rows], "preview": preview}


def _collect(cursor: sqlite3.Cursor, answer: dict[str, Any], limits: Limits) -> None:
    size = 0
    rows: list[list[Any]] = answer["rows"]
    while True:
        row = cursor.fetchone()
        if row is None:
            return
        if len(rows) >= limits.max_rows:
            answer["truncated"] = (
                f"row limit reached: only the first {limits.max_rows} rows are shown; add LIMIT or narrow WHERE"
            )
            return
        values = [f"<blob {len(v)} bytes>" if isinstance(v, bytes) else v for v in row]
        size += len(json.dumps(values, ensure_ascii=False))
        if size > limits.output_chars:
            answer["truncated"] = (
                f"output limit reached: {len(rows)} rows shown (limit {limits.output_chars:,} characters); "
                "select fewer columns, use substr(), or add LIMIT"
            )
            return
        rows.append(values)
