"""memory_sql on PostgreSQL, first wall: PostgreSQL's own parser (pglast) reads the statement.

Only ONE statement passes, and only a SELECT (WITH ... SELECT, VALUES, TABLE) or an UPDATE of
``messages.content``. Every node of its tree must be of a kind listed in ``pg_allow``, every
function, operator and type one of its allow-lists, every table one of memory_sql's views (or a
CTE it defines), and every name must resolve (``pg_scope``): ``m.f`` and ``(x).f`` are function
calls unless ``f`` is a column of ``m`` or a field of the row ``x``, and meet the same allow-list.
No row locks, no ``SELECT INTO``, no data-modifying CTE. What runs is the checked tree printed
back to SQL and checked again, so the server executes exactly what was read here.

An UPDATE is never run as one: it becomes the SELECT of (id, role, old content, new content)
of the messages it would change (``dry_run``), read like any SELECT; the app writes the approved
changes itself. So nothing but reads reaches the server before the user said yes.

The second wall is the server's (core/store/pg_memory.py): the statement runs inside a SECURITY
DEFINER function owned by a role that can read only the views and write nothing, in a READ ONLY
transaction; PostgreSQL refuses any change of role inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tui_agent.core.tools.pg_allow import FUNCTIONS, NODES, OPERATORS, TYPES, plain_name
from tui_agent.core.tools.pg_names import VIEW_COLUMNS
from tui_agent.core.tools.pg_scope import Resolver, Scope
from tui_agent.core.tools.sql_guard import ALLOWED, QueryRefused, first_keywords

__all__ = ["FUNCTIONS", "NODES", "Checked", "QueryRefused", "check", "walk"]

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
#: The columns of an UPDATE's dry run (see ``dry_run``).
ID, ROLE_COLUMN, OLD, NEW = "memory_sql_id", "memory_sql_role", "memory_sql_old", "memory_sql_new"

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
    sql: str  # what PostgreSQL will run (printed from the checked tree): an UPDATE's dry run for "update"


def refuse(what: str) -> QueryRefused:
    return QueryRefused(f"refused: {what} is not allowed; {ALLOWED}")


def check(sql: str) -> Checked:
    """Parse, check, print back and check again; raise QueryRefused with the reason in words."""
    from pglast.stream import RawStream

    try:
        stmt = _one_statement(sql)
        kind = _check_statement(stmt, sql)
        if kind == "update":
            stmt = dry_run(stmt)
            _check_statement(stmt, sql)
        _name_subqueries(stmt)
        try:
            printed = RawStream()(stmt)
        except Exception:  # the printer cannot write this tree back: nothing runs
            raise refuse("this statement (it cannot be printed back to SQL)") from None
        if _check_statement(_one_statement(printed), printed) != "select":
            raise refuse("this statement")
    except RecursionError:
        raise refuse("a statement nested this deep") from None
    return Checked(kind, printed)


def dry_run(update: Any) -> Any:
    """``UPDATE messages [AS t] SET content = e [FROM f] [WHERE w]`` as the SELECT of what it would do:
    ``SELECT DISTINCT ON (t.id) t.id, t.role, t.content, CAST(e AS text) FROM messages [AS t], f WHERE w``."""
    from pglast import ast, enums

    name = update.relation.alias.aliasname if update.relation.alias else "messages"

    def column(field: str) -> Any:
        return ast.ColumnRef(fields=(ast.String(sval=name), ast.String(sval=field)))

    (target,) = update.targetList
    text = ast.TypeName(names=(ast.String(sval="pg_catalog"), ast.String(sval="text")), typemod=-1)
    return ast.SelectStmt(
        targetList=(
            ast.ResTarget(name=ID, val=column("id")),
            ast.ResTarget(name=ROLE_COLUMN, val=column("role")),
            ast.ResTarget(name=OLD, val=column("content")),
            ast.ResTarget(name=NEW, val=ast.TypeCast(arg=target.val, typeName=text)),
        ),
        fromClause=(
            ast.RangeVar(relname="messages", inh=True, relpersistence="p", alias=update.relation.alias),
            *(update.fromClause or ()),
        ),
        whereClause=update.whereClause,
        withClause=update.withClause,
        distinctClause=(column("id"),),
        sortClause=(
            ast.SortBy(
                node=column("id"),
                sortby_dir=enums.SortByDir.SORTBY_DEFAULT,
                sortby_nulls=enums.SortByNulls.SORTBY_NULLS_DEFAULT,
            ),
        ),
        limitOption=enums.LimitOption.LIMIT_OPTION_DEFAULT,
        op=enums.SetOperation.SETOP_NONE,
        groupDistinct=False,
        all=False,
    )


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
    if kind == "select":
        _resolve(stmt)
    return kind


def _resolve(stmt: Any) -> None:
    """Every name resolved (pg_scope); a ColumnRef or field notation the walk did not reach is refused."""
    resolver = Resolver(VIEW_COLUMNS, refuse)
    resolver.statement(stmt, Scope([]))
    for node in walk(stmt):
        if type(node).__name__ in ("ColumnRef", "A_Indirection") and id(node) not in resolver.resolved:
            raise refuse("a name memory_sql cannot resolve")


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
        if target.name != "content" or target.indirection or type(target.val).__name__ == "MultiAssignRef":
            raise QueryRefused(f"refused: only messages.content may be updated; {ALLOWED}")
    if len(stmt.targetList or ()) != 1:
        raise QueryRefused(f"refused: an UPDATE sets messages.content once; {ALLOWED}")
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
        if node.relname not in VIEW_COLUMNS and node.relname not in ctes:
            raise refuse(f"reading {node.relname}")
    elif name == "FuncCall":
        function = plain_name(_names(node.funcname))
        if function not in FUNCTIONS:
            raise refuse(f"the function {function}")
    elif name == "TypeName":
        type_name = plain_name(_names(node.names))
        if type_name not in TYPES or getattr(node, "pct_type", False) or getattr(node, "setof", False):
            raise refuse(f"the type {type_name}")
    elif name in ("A_Expr", "SortBy", "SubLink"):
        operator = getattr(node, {"A_Expr": "name", "SortBy": "useOp", "SubLink": "operName"}[name])
        if operator and plain_name(_names(operator)) not in OPERATORS:
            raise refuse(f"the operator {plain_name(_names(operator))}")
    elif name == "ColumnRef":
        if len(node.fields) > 2:
            raise refuse("a column named with its schema (name it table.column)")


def _names(parts: Any) -> list[str]:
    return [str(part.sval) for part in parts or ()]


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
