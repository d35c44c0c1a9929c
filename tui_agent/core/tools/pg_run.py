"""One memory_sql statement on PostgreSQL (runs inside the memory_sql worker process).

The walls, in order: pglast reads the statement (``pg_guard.check``: every name resolved, every
function, operator and type on an allow-list); a connection of its own opens a READ ONLY
transaction with ``statement_timeout``, ``lock_timeout`` and ``idle_in_transaction_session_timeout``
and switches to memory_sql's role with ``SET LOCAL ROLE``; then the statement runs inside
``tui_agent_memory.run_select``, a SECURITY DEFINER function owned by that role
(core/store/pg_memory.py), in which PostgreSQL refuses any change of role: the server itself then
refuses any table but the views, any write, and never shows a ``memory_tool`` row.

A SELECT comes back as JSON rows (a header row naming the columns, then at most the row cap). An
UPDATE never runs here: pg_guard turned it into a SELECT of (id, old, new) for the messages it
would change, read in the same READ ONLY transaction, so a declined UPDATE leaves no trace on the
server; the app writes the approved changes itself, with revisions (``sql_update.apply_updates``),
as on SQLite. The answers have the SQLite worker's shape.
"""

from __future__ import annotations

import decimal
import json
from typing import Any

from tui_agent.core.tools.pg_guard import ID, NEW, OLD, ROLE_COLUMN, Checked, check
from tui_agent.core.tools.pg_names import ROLE, RUN_SELECT, VIEWS, SetupMissing
from tui_agent.core.tools.sql_guard import ALLOWED, QueryRefused
from tui_agent.core.tools.sql_run import Limits, Request

__all__ = ["Checked", "check", "run_guarded"]

LOCK_TIMEOUT_MS = 1000
CONNECT_TIMEOUT_S = 5


def run_guarded(request: Request) -> dict[str, Any]:
    import psycopg

    try:
        checked = check(request.query)
        return _run(request, checked)
    except QueryRefused as exc:
        return {"ok": False, "error": str(exc)}
    except SetupMissing as exc:
        return {"ok": False, "error": str(exc), "setup_missing": True}
    except psycopg.Error as exc:
        return {"ok": False, "error": explain(exc, request)}


def _run(request: Request, checked: Checked) -> dict[str, Any]:
    import psycopg

    assert request.postgres is not None
    limits = request.limits
    conn = psycopg.connect(
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        application_name="tui-agent memory_sql",
        **request.postgres["connect"],
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute("BEGIN READ ONLY")  # an UPDATE too: its dry run is a SELECT
            timeout_ms = int(limits.time_limit_s * 1000)
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true), "
                "set_config('idle_in_transaction_session_timeout', %s, true)",
                (f"{timeout_ms}ms", f"{LOCK_TIMEOUT_MS}ms", f"{timeout_ms + 2000}ms"),
            )
            try:
                cursor.execute(f"SET LOCAL ROLE {ROLE}")
            except (psycopg.errors.InvalidParameterValue, psycopg.errors.InsufficientPrivilege) as exc:
                raise SetupMissing(
                    f"memory_sql cannot switch to its role ({exc.diag.message_primary}): run `tui-agent db setup`"
                ) from None
            if checked.kind == "select":
                return _select(cursor, checked.sql, limits)
            return _update(cursor, checked, limits)
    finally:
        conn.close()  # never committed (and READ ONLY): nothing was written


def run_select(cursor: Any, sql: str, max_rows: int) -> tuple[list[str], list[list[Any]]]:
    """The statement run inside memory_sql's SECURITY DEFINER function: its columns and first rows."""
    cursor.execute(f"SELECT n, row_json::text FROM {RUN_SELECT}(%s, %s)", (sql, max_rows), prepare=False)
    fetched = sorted(cursor.fetchall(), key=lambda row: int(row[0]))
    columns: list[str] = []
    rows: list[list[Any]] = []
    for n, text in fetched:
        pairs = _pairs(text)
        if int(n) == 0:
            columns = [name for name, _ in pairs]
        else:
            rows.append([value for _, value in pairs])
    return columns, rows


class _Pairs(list[Any]):
    """A JSON object as its (key, value) pairs: a row keeps its column order and repeated names."""


def _pairs(text: str | None) -> list[tuple[str, Any]]:
    if text is None:
        return []
    parsed = json.loads(text, object_pairs_hook=_Pairs, parse_float=decimal.Decimal)
    return [(str(key), _objects(value)) for key, value in parsed]


def _objects(value: Any) -> Any:
    """Nested JSON (a json column's value) back to dicts and lists."""
    if isinstance(value, _Pairs):
        return {str(key): _objects(item) for key, item in value}
    if isinstance(value, list):
        return [_objects(item) for item in value]
    return value


def _select(cursor: Any, sql: str, limits: Limits) -> dict[str, Any]:
    columns, fetched = run_select(cursor, sql, limits.max_rows)
    answer: dict[str, Any] = {"ok": True, "kind": "select", "columns": columns, "rows": [], "truncated": ""}
    size = 0
    rows: list[list[Any]] = answer["rows"]
    for row in fetched:
        if len(rows) >= limits.max_rows:
            answer["truncated"] = (
                f"row limit reached: only the first {limits.max_rows} rows are shown; add LIMIT or narrow WHERE"
            )
            break
        values = [plain(value, limits) for value in row]
        size += len(json.dumps(values, ensure_ascii=False))
        if size > limits.output_chars:
            answer["truncated"] = (
                f"output limit reached: {len(rows)} rows shown (limit {limits.output_chars:,} characters); "
                "select fewer columns, use substr(), or add LIMIT"
            )
            break
        rows.append(values)
    return answer


def plain(value: Any, limits: Limits) -> Any:
    """A value as JSON carries it (as the SQLite worker gives it)."""
    if isinstance(value, str):
        if len(value.encode("utf-8", "surrogatepass")) > limits.value_bytes:
            raise QueryRefused(f"stopped: a value exceeded the {limits.value_bytes:,} byte size limit")
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limits.value_bytes:
        raise QueryRefused(f"stopped: a value exceeded the {limits.value_bytes:,} byte size limit")
    return json.loads(text, parse_float=float)


def _update(cursor: Any, checked: Checked, limits: Limits) -> dict[str, Any]:
    """The UPDATE's dry run, a SELECT: (id, role, old head, old length, new if kept, new head, new length,
    total, first NULL, first too big, its size), capped."""
    cap, most, head = int(limits.update_max_rows), int(limits.update_max_value_bytes), int(limits.preview_chars)
    wrapped = f"""WITH memory_sql_u AS ({checked.sql}),
memory_sql_d AS (
    SELECT u.{ID} AS id, u.{ROLE_COLUMN} AS role, left(u.{OLD}, {head}) AS old_head, char_length(u.{OLD}) AS old_len,
        u.{NEW} AS new, octet_length(u.{NEW}) AS new_bytes, char_length(u.{NEW}) AS new_len
    FROM memory_sql_u u WHERE u.{NEW} IS DISTINCT FROM u.{OLD}),
memory_sql_s AS (
    SELECT d.*, row_number() OVER (ORDER BY d.id) AS n, count(*) OVER () AS total,
        min(d.id) FILTER (WHERE d.new IS NULL) OVER () AS null_id,
        min(d.id) FILTER (WHERE d.new_bytes > {most}) OVER () AS too_big FROM memory_sql_d d)
SELECT s.id, s.role, s.old_head, s.old_len, CASE WHEN s.new_bytes <= {most} THEN s.new END AS new,
    left(s.new, {head}) AS new_head, s.new_len, s.total, s.null_id, s.too_big,
    (SELECT d.new_bytes FROM memory_sql_d d WHERE d.id = s.too_big) AS too_big_bytes
FROM memory_sql_s s WHERE s.n <= {cap} ORDER BY s.id"""
    _columns, rows = run_select(cursor, wrapped, cap)
    if not rows:
        return {"ok": True, "kind": "update", "count": 0, "updates": [], "ids": [], "preview": []}
    total, null_id, too_big, too_big_bytes = int(rows[0][7]), rows[0][8], rows[0][9], rows[0][10]
    if null_id is not None:
        raise QueryRefused("refused: the new content of a message would be NULL; messages.content must be text")
    if too_big is not None:
        raise QueryRefused(
            f"refused: the new content of message {too_big} is {int(too_big_bytes):,} bytes; the limit is "
            f"{most:,} bytes (profile field sql_update_max_value_bytes)"
        )
    preview = [[int(r[0]), r[1], r[2], int(r[3]), r[5], int(r[6])] for r in rows[: limits.preview_rows]]
    updates = [] if total > cap else [[int(r[0]), r[4]] for r in rows]
    return {
        "ok": True,
        "kind": "update",
        "count": total,
        "updates": updates,
        "ids": [int(r[0]) for r in rows],
        "preview": preview,
    }


def explain(exc: BaseException, request: Request) -> str:
    """A server error in one line for the model (its primary message only: a DETAIL can hold row data)."""
    from psycopg import errors

    diag = getattr(exc, "diag", None)
    primary = (getattr(diag, "message_primary", None) or str(exc) or type(exc).__name__).splitlines()[0]
    limits = request.limits
    if isinstance(exc, errors.QueryCanceled):
        return f"stopped: the query ran longer than the {limits.time_limit_s:g}s time limit"
    if isinstance(exc, errors.LockNotAvailable):
        return "stopped: another writer held these messages for too long (lock timeout); try again"
    if isinstance(exc, errors.InsufficientPrivilege):
        return f"refused: {primary} (memory_sql reads {', '.join(VIEWS)}); {ALLOWED}"
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return f"refused: {primary}; {ALLOWED}"
    if isinstance(exc, errors.NotNullViolation):
        return "refused: the new content of a message would be NULL; messages.content must be text"
    if isinstance(exc, (errors.ProgramLimitExceeded, errors.OutOfMemory, errors.DiskFull)):
        return f"stopped: the query needed more than the server allows ({primary}); narrow it or add LIMIT"
    if isinstance(exc, errors.OperationalError) and request.postgres is not None:
        from tui_agent.core.store.errors import describe

        return str(describe(exc, request.postgres.get("where", "the PostgreSQL store")))
    return f"SQL error: {primary}"
