"""memory_sql on PostgreSQL, first wall: PostgreSQL's own parser (pglast) reads the statement.

Only ONE statement passes, and only a SELECT (WITH ... SELECT, VALUES, TABLE) or an UPDATE of
``messages.content``. Every node of its tree must be of a kind listed here, every table it names
one of memory_sql's views (or a CTE it defines), every function one of an allow-list (no
``set_config``, ``pg_read_file``, ``dblink``, ``pg_sleep``, ``query_to_xml``...), no row locks,
no ``SELECT INTO``, no data-modifying CTE. What runs is the checked tree printed back to SQL and
checked again, so the server executes exactly what was read here.

The second wall is the server's (core/store/pg_memory.py): the statement runs as a role that
can read only the views and update only ``content``, in a READ ONLY transaction for a SELECT.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tui_agent.core.store.pg_memory import VIEWS
from tui_agent.core.tools.sql_guard import ALLOWED, QueryRefused, first_keywords

TABLES = frozenset(
    {
        "settings",
        "profiles",
        "conversations",
        "messages",
        "attachments",
        "message_revisions",
        "mcp_servers",
        "mcp_server_profiles",
        "media_blobs",
        "media_paths",
        "tui_agent_schema",
    }
)

#: CTE names refused beside TABLES: PostgreSQL's catalogs, and the SQLite store's own tables.
_SHIELDED_PREFIXES = ("pg_", "sqlite_", "messages_fts")

NODES = frozenset(
    """RawStmt SelectStmt UpdateStmt ResTarget ColumnRef A_Star A_Const Integer Float String Boolean
    BitString A_Expr BoolExpr NullTest BooleanTest FuncCall TypeCast TypeName CollateClause CaseExpr
    CaseWhen CoalesceExpr MinMaxExpr SQLValueFunction SubLink RangeVar RangeSubselect RangeFunction
    JoinExpr Alias SortBy WindowDef WithClause CommonTableExpr A_ArrayExpr A_Indirection A_Indices
    RowExpr GroupingSet ColumnDef""".split()
)

FUNCTIONS = frozenset(
    """length char_length character_length octet_length bit_length lower upper initcap substr substring
    left right strpos position replace translate trim btrim ltrim rtrim lpad rpad repeat reverse
    split_part concat concat_ws format starts_with regexp_replace regexp_match regexp_matches
    regexp_count regexp_instr regexp_like regexp_substr regexp_split_to_array regexp_split_to_table
    string_to_array array_to_string string_to_table chr ascii md5 to_hex overlay normalize
    similar_to_escape abs round floor ceil ceiling trunc mod power sqrt sign div ln log exp random
    count sum avg min max string_agg array_agg bool_and bool_or every json_agg jsonb_agg group_concat
    mode percentile_cont percentile_disc row_number rank dense_rank lag lead first_value last_value
    nth_value ntile percent_rank cume_dist now date_trunc date_part extract to_char to_date to_number
    to_timestamp age make_date make_time make_timestamp make_interval clock_timestamp timezone date_bin
    justify_days justify_hours json_build_object jsonb_build_object json_build_array jsonb_build_array
    to_json to_jsonb json_extract_path_text jsonb_extract_path_text json_extract_path jsonb_extract_path
    json_array_length jsonb_array_length json_typeof jsonb_typeof json_array_elements
    jsonb_array_elements json_array_elements_text jsonb_array_elements_text json_each jsonb_each
    json_each_text jsonb_each_text json_object_keys jsonb_object_keys jsonb_pretty generate_series
    unnest array_length cardinality num_nulls num_nonnulls to_tsvector to_tsquery plainto_tsquery
    websearch_to_tsquery phraseto_tsquery ts_rank ts_rank_cd ts_headline""".split()
)

SCHEMA_CHANGE = "changing the database schema"
_WORDS = {
    "InsertStmt": "INSERT INTO {rel}",
    "DeleteStmt": "DELETE FROM {rel}",
    "MergeStmt": "MERGE INTO {rel}",
    "UpdateStmt": "UPDATE of {rel}",
    "TruncateStmt": "TRUNCATE",
    "CopyStmt": "COPY (reading or writing files)",
    "DoStmt": "a DO block (running code)",
    "CallStmt": "CALL (running a procedure)",
    "ListenStmt": "LISTEN",
    "NotifyStmt": "NOTIFY",
    "UnlistenStmt": "UNLISTEN",
    "TransactionStmt": "a transaction statement ({kw})",
    "ExplainStmt": "EXPLAIN",
    "LockStmt": "LOCK",
    "DeclareCursorStmt": "DECLARE (cursors)",
    "PrepareStmt": "PREPARE",
    "ExecuteStmt": "EXECUTE",
}


@dataclass(frozen=True)
class Checked:
    kind: str  # "select" or "update"
    sql: str  # the statement as PostgreSQL will run it (printed from the checked tree)
    target: str = "messages"  # an UPDATE's name for the messages it changes (its alias, if any)


def refuse(what: str) -> QueryRefused:
    return QueryRefused(f"refused: {what} is not allowed; {ALLOWED}")


def check(sql: str) -> Checked:
    """Parse, check, print back and check again; raise QueryRefused with the reason in words."""
    from pglast.stream import RawStream

    try:
        stmt = _one_statement(sql)
        kind = _check_statement(stmt, sql)
        _name_subqueries(stmt)
        try:
            printed = RawStream()(stmt)
        except Exception:  # the printer cannot write this tree back: nothing runs
            raise refuse("this statement (it cannot be printed back to SQL)") from None
        if _check_statement(_one_statement(printed), printed) != kind:
            raise refuse("this statement")
    except RecursionError:
        raise refuse("a statement nested this deep") from None
    alias = getattr(stmt, "relation", None) and stmt.relation.alias
    return Checked(kind, printed, alias.aliasname if kind == "update" and alias else "messages")


def _name_subqueries(stmt: Any) -> None:
    """``FROM (SELECT ...)`` without a name, as SQLite (and PostgreSQL 16) take it: PostgreSQL 15 needs one."""
    from pglast import ast

    for number, node in enumerate(walk(stmt)):
        if type(node).__name__ == "RangeSubselect" and node.alias is None:
            node.alias = ast.Alias(aliasname=f"subquery_{number}")


def _one_statement(sql: str) -> Any:
    from pglast import parse_sql
    from pglast.parser import ParseError

    try:
        statements = parse_sql(sql)
    except ParseError as exc:
        raise QueryRefused(f"SQL error: PostgreSQL cannot parse this statement ({exc}); {ALLOWED}") from None
    if not statements:
        raise QueryRefused("missing parameter: query (it is empty)")
    if len(statements) > 1:
        raise QueryRefused(f"refused: one statement per call ({ALLOWED})")
    return statements[0].stmt


def _check_statement(stmt: Any, sql: str) -> str:
    name = type(stmt).__name__
    if name == "SelectStmt":
        kind = "select"
    elif name == "UpdateStmt":
        kind = "update"
        _check_update(stmt)
    else:
        raise refuse(_statement_words(stmt, sql))
    ctes = _cte_names(stmt)
    for node in walk(stmt):
        _check_node(node, ctes)
    return kind


def _statement_words(stmt: Any, sql: str) -> str:
    name = type(stmt).__name__
    relation = getattr(stmt, "relation", None)
    rel = getattr(relation, "relname", "") or ""
    if name in _WORDS:
        return _WORDS[name].format(rel=rel, kw=first_keywords(sql, 1)).strip()
    if name == "VariableSetStmt" or name == "VariableShowStmt":
        return f"{first_keywords(sql, 1)} {getattr(stmt, 'name', '') or ''}".strip()
    if name.startswith(("Create", "Alter", "Drop", "Grant", "Rename", "Comment", "Define", "Index", "View")):
        return f"{first_keywords(sql, 2)} ({SCHEMA_CHANGE})"
    keyword = first_keywords(sql, 1)
    return f"{keyword} statements" if keyword else "this statement"


def _check_update(stmt: Any) -> None:
    relation = stmt.relation
    if relation.schemaname or relation.catalogname or relation.relname != "messages":
        target = ".".join(x for x in (relation.schemaname, relation.relname) if x)
        raise refuse(f"UPDATE of {target} (only messages.content may be updated)")
    for target in stmt.targetList or ():
        if target.name != "content" or target.indirection:
            raise QueryRefused(f"refused: only messages.content may be updated; {ALLOWED}")
    if getattr(stmt, "returningClause", None) is not None or getattr(stmt, "returningList", None):
        raise refuse("RETURNING")


def _cte_names(stmt: Any) -> set[str]:
    names: set[str] = set()
    for node in walk(stmt):
        if type(node).__name__ == "CommonTableExpr":
            name = str(node.ctename)
            if name.casefold() in TABLES or name.casefold().startswith(_SHIELDED_PREFIXES):
                raise QueryRefused(
                    f"refused: a WITH clause may not define a name that hides a table or view ({name}); "
                    "pick another name for the CTE"
                )
            if type(node.ctequery).__name__ != "SelectStmt":
                raise refuse(f"{_statement_words(node.ctequery, '')} inside WITH (a WITH clause may only hold SELECTs)")
            names.add(name)
    return names


def _check_node(node: Any, ctes: set[str]) -> None:
    name = type(node).__name__
    if name not in NODES:
        raise refuse(f"{name} (a part of SQL memory_sql does not take)")
    if name == "SelectStmt":
        if node.intoClause is not None:
            raise refuse("SELECT INTO (creating a table)")
        if node.lockingClause:
            raise refuse("SELECT ... FOR UPDATE / FOR SHARE (locking rows)")
    elif name == "RangeVar":
        if node.schemaname or node.catalogname:
            raise refuse(f"reading {node.schemaname}.{node.relname}")
        if node.relname not in VIEWS and node.relname not in ctes:
            raise refuse(f"reading {node.relname}")
    elif name == "FuncCall":
        parts = [str(part.sval) for part in node.funcname]
        if len(parts) == 2 and parts[0] == "pg_catalog":
            parts = parts[1:]
        if len(parts) != 1 or parts[0] not in FUNCTIONS:
            raise refuse(f"the function {'.'.join(parts)}")
    elif name == "TypeName":
        parts = [str(part.sval) for part in node.names or ()]
        if len(parts) == 2 and parts[0] == "pg_catalog":
            parts = parts[1:]
        if len(parts) != 1 or parts[0].startswith(("reg", "pg_")) or getattr(node, "pct_type", False):
            raise refuse(f"the type {'.'.join(parts)}")
    elif name == "ColumnRef":
        if len(node.fields) > 2:
            raise refuse("a column named with its schema (name it table.column)")


def walk(node: Any) -> Iterator[Any]:
    """Every node of a pglast tree, depth first."""
    from pglast import ast

    if isinstance(node, ast.Node):
        yield node
        for attribute in node:
            yield from walk(getattr(node, attribute))
    elif isinstance(node, (tuple, list)):
        for item in node:
            yield from walk(item)
