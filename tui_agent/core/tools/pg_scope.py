"""memory_sql on PostgreSQL: every name a statement uses, resolved as PostgreSQL resolves it.

PostgreSQL reads ``m.f`` as the function ``f(m)`` when ``m`` has no column ``f``, and ``(x).f``
as ``f(x)`` when ``x`` has no field ``f``: a function call that a check of ``FuncCall`` nodes alone
never sees (``m.row_to_json``, ``('role'::text).current_setting``, ``(q::text).ts_stat``). So here
each FROM item's columns are worked out (memory_sql's views, CTEs, subqueries, functions, joins,
aliases) and scoped as PostgreSQL scopes them, and:

- ``t.c`` must name a table ``t`` of the statement that has the column ``c``;
- a bare name must be a column (or the whole row) of a table in scope, or, in ORDER BY, GROUP BY
  and DISTINCT ON, an output column;
- ``(x).f`` is allowed only where ``x`` is a whole row whose fields are known and ``f`` is one of
  them (``(m).content``); any other field notation is refused as the function call it would be.

Each ColumnRef and A_Indirection of the tree must have been resolved here, or the statement is
refused (a place this walk would not reach cannot hide a call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tui_agent.core.tools.pg_allow import OUT_NAMED, RECORD_FUNCTIONS, SQL_VALUE_NAMES, plain_name

Columns = tuple[str, ...] | None  # None: not known (then no column may be named through it)


@dataclass
class Source:
    name: str | None
    columns: Columns


@dataclass
class Scope:
    sources: list[Source]
    parent: Scope | None = None
    outputs: tuple[str, ...] = ()  # what a bare ORDER BY / GROUP BY / DISTINCT ON name may also mean
    ctes: dict[str, Columns] = field(default_factory=dict)

    def chain(self) -> Iterator[Scope]:
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def relation(self, name: str) -> Source | None:
        for scope in self.chain():
            for source in scope.sources:
                if source.name == name:
                    return source
        return None

    def is_column(self, name: str) -> bool:
        for scope in self.chain():
            for source in scope.sources:
                if source.columns is None or name in source.columns:
                    return True
        return False

    def knows(self, name: str) -> bool:
        return name in self.outputs or self.is_column(name) or self.relation(name) is not None


def _kind(node: Any) -> str:
    return type(node).__name__


def _strings(nodes: Any) -> list[str]:
    return [str(node.sval) for node in nodes or ()]


def _rename(columns: Columns, alias: Any) -> Columns:
    names = _strings(getattr(alias, "colnames", None))
    if columns is None or not names:
        return columns
    return tuple(names) + columns[len(names) :]


class Resolver:
    def __init__(self, views: dict[str, tuple[str, ...]], refuse: Callable[[str], Exception]) -> None:
        from pglast import ast

        self.node_class = ast.Node
        self.views = views
        self.refuse = refuse
        self.resolved: set[int] = set()
        self.outputs: dict[int, Columns] = {}  # id(SelectStmt) -> its output columns

    # statements -----------------------------------------------------------------------------
    def statement(self, stmt: Any, outer: Scope | None) -> Columns:
        ctes = dict(outer.ctes) if outer is not None else {}
        if stmt.withClause is not None:
            for cte in stmt.withClause.ctes:
                query = cte.ctequery
                if stmt.withClause.recursive and query.op is not None and query.op.name != "SETOP_NONE":
                    first = self.statement(query.larg, Scope([], outer, ctes=ctes))
                    ctes[str(cte.ctename)] = _rename(first, _Alias(cte.aliascolnames))
                columns = self.statement(query, Scope([], outer, ctes=dict(ctes)))
                ctes[str(cte.ctename)] = _rename(columns, _Alias(cte.aliascolnames))
        base = Scope([], outer, ctes=ctes)
        columns = self._body(stmt, base)
        self.outputs[id(stmt)] = columns
        return columns

    def _body(self, stmt: Any, base: Scope) -> Columns:
        if stmt.op is not None and stmt.op.name != "SETOP_NONE":
            columns = self.statement(stmt.larg, base)
            self.statement(stmt.rarg, base)
            after = Scope([], base, outputs=columns or (), ctes=base.ctes)
            for item in stmt.sortClause or ():
                self.expr(item, after)
            self._limits(stmt, base)
            return columns
        if stmt.valuesLists:
            for row in stmt.valuesLists:
                for item in row:
                    self.expr(item, base)
            return tuple(f"column{i + 1}" for i in range(len(stmt.valuesLists[0])))
        sources: list[Source] = []
        for item in stmt.fromClause or ():
            sources += self.from_item(item, base, sources)
        scope = Scope(sources, base, ctes=base.ctes)
        names: list[str] = []
        known = True
        for target in stmt.targetList or ():
            self.expr(target.val, scope)
            found = self.target_names(target, scope)
            if found is None:
                known = False
            else:
                names += found
        outputs = tuple(names)
        with_outputs = Scope(sources, base, outputs=outputs, ctes=base.ctes)
        for item in (stmt.whereClause, stmt.havingClause, stmt.windowClause):
            self.expr(item, scope)
        for item in (stmt.groupClause, stmt.sortClause, stmt.distinctClause):
            self.expr(item, with_outputs)
        self._limits(stmt, base)
        return outputs if known else None

    def _limits(self, stmt: Any, scope: Scope) -> None:
        self.expr(stmt.limitCount, scope)
        self.expr(stmt.limitOffset, scope)

    # FROM -------------------------------------------------------------------------------------
    def from_item(self, item: Any, base: Scope, preceding: list[Source]) -> list[Source]:
        kind = _kind(item)
        columns: Columns = ()
        if kind == "RangeVar":
            name = str(item.relname)
            if name in base.ctes:
                columns = base.ctes[name]
            elif name in self.views:
                columns = self.views[name]
            else:
                raise self.refuse(f"reading {name}")
            return [Source(item.alias.aliasname if item.alias else name, _rename(columns, item.alias))]
        if kind == "RangeSubselect":
            visible = Scope(list(preceding) if item.lateral else [], base, ctes=base.ctes)
            columns = self.statement(item.subquery, visible)
            return [Source(item.alias.aliasname if item.alias else None, _rename(columns, item.alias))]
        if kind == "RangeFunction":
            visible = Scope(list(preceding), base, ctes=base.ctes)  # a function in FROM sees earlier items
            calls = list(item.functions or ())
            for call, definitions in calls:
                self.expr(call, visible)
                more = self.function_columns(call, definitions, item.alias, len(calls))
                columns = None if columns is None or more is None else columns + more
            if item.ordinality and columns is not None:
                columns += ("ordinality",)
            called: str | None = item.alias.aliasname if item.alias else None
            if called is None and len(calls) == 1:
                called = _func_name(calls[0][0])
            return [Source(called, _rename(columns, item.alias))]
        if kind == "JoinExpr":
            left = self.from_item(item.larg, base, preceding)
            right = self.from_item(item.rarg, base, preceding + left)
            self.expr(item.quals, Scope(left + right, base, ctes=base.ctes))
            using = tuple(_strings(item.usingClause))
            joined: list[Source] = []
            if getattr(item, "join_using_alias", None) is not None:
                joined.append(Source(item.join_using_alias.aliasname, using))
            if item.alias is not None:
                every: Columns = using
                for source in left + right:
                    every = None if every is None or source.columns is None else every + source.columns
                return [*joined, Source(item.alias.aliasname, _rename(every, item.alias))]
            return [*left, *right, *joined]
        raise self.refuse(f"{kind} in FROM")

    def function_columns(self, call: Any, definitions: Any, alias: Any, calls: int) -> Columns:
        if definitions:
            return tuple(str(d.colname) for d in definitions)
        name = _func_name(call)
        if name in RECORD_FUNCTIONS:
            return RECORD_FUNCTIONS[name]
        if name in OUT_NAMED:
            return (OUT_NAMED[name],)
        if name == "unnest" and len(call.args or ()) > 1:
            return ("unnest",) * len(call.args)
        if calls == 1 and alias is not None:
            return (str(alias.aliasname),)
        return (name,)

    # targets ----------------------------------------------------------------------------------
    def target_names(self, target: Any, scope: Scope) -> list[str] | None:
        value = target.val
        if _kind(value) == "ColumnRef" and _kind(value.fields[-1]) == "A_Star":
            if len(value.fields) == 1:
                every: list[str] = []
                for source in scope.sources:
                    if source.columns is None:
                        return None
                    every += source.columns
                return every
            named = scope.relation(str(value.fields[0].sval))
            return None if named is None or named.columns is None else list(named.columns)
        if _kind(value) == "A_Indirection" and _kind(value.indirection[-1]) == "A_Star":
            fields = self.composite(value.arg, scope)
            return None if fields is None else list(fields)
        if target.name:
            return [str(target.name)]
        return [self.figure(value)[0]]

    def figure(self, node: Any) -> tuple[str, int]:
        """The column name PostgreSQL gives an unnamed output (parse_target.c, FigureColnameInternal)."""
        kind = _kind(node)
        if kind == "ColumnRef":
            names = [str(f.sval) for f in node.fields if _kind(f) == "String"]
            return (names[-1], 2) if names else ("?column?", 0)
        if kind == "A_Indirection":
            names = [str(f.sval) for f in node.indirection if _kind(f) == "String"]
            return (names[-1], 2) if names else self.figure(node.arg)
        if kind == "FuncCall":
            return _func_name(node), 2
        if kind == "A_Expr" and node.kind.name == "AEXPR_NULLIF":
            return "nullif", 2
        if kind == "TypeCast":
            name, strength = self.figure(node.arg)
            return (name, strength) if strength > 1 else (str(node.typeName.names[-1].sval), 1)
        if kind == "CollateClause":
            return self.figure(node.arg)
        if kind == "SubLink":
            link = node.subLinkType.name
            if link == "EXISTS_SUBLINK":
                return "exists", 2
            if link == "ARRAY_SUBLINK":
                return "array", 2
            if link == "EXPR_SUBLINK":
                columns = self.outputs.get(id(node.subselect))
                return (columns[0], 2) if columns else ("?column?", 0)
            return "?column?", 0
        if kind == "CaseExpr":
            name, strength = self.figure(node.defresult) if node.defresult is not None else ("", 0)
            return (name, strength) if strength > 1 else ("case", 1)
        fixed = {"A_ArrayExpr": "array", "RowExpr": "row", "CoalesceExpr": "coalesce"}
        if kind in fixed:
            return fixed[kind], 2
        if kind == "MinMaxExpr":
            return ("greatest" if node.op.name == "IS_GREATEST" else "least"), 2
        if kind == "SQLValueFunction":
            return SQL_VALUE_NAMES.get(node.op.name, "?column?"), 2
        return "?column?", 0

    # expressions ------------------------------------------------------------------------------
    def expr(self, node: Any, scope: Scope) -> None:
        if node is None:
            return
        if isinstance(node, (tuple, list)):
            for item in node:
                self.expr(item, scope)
            return
        kind = _kind(node)
        if kind == "ColumnRef":
            self.column(node, scope)
        elif kind == "A_Indirection":
            self.indirection(node, scope)
        elif kind == "SubLink":
            self.expr(node.testexpr, scope)
            self.statement(node.subselect, scope)
        elif kind == "SelectStmt":
            self.statement(node, scope)
        elif isinstance(node, self.node_class):
            for attribute in node:
                value = getattr(node, attribute)
                if isinstance(value, (tuple, list, self.node_class)):
                    self.expr(value, scope)

    def column(self, node: Any, scope: Scope) -> None:
        fields = node.fields
        if len(fields) == 1:
            if _kind(fields[0]) == "String" and not scope.knows(str(fields[0].sval)):
                raise self.refuse(f"the name {fields[0].sval} (no table of this statement has such a column)")
        elif len(fields) == 2:
            if _kind(fields[0]) != "String":
                raise self.refuse("this column reference")
            table = str(fields[0].sval)
            source = scope.relation(table)
            if source is None:
                raise self.refuse(f"{table}.… ({table} is not a table of this statement)")
            if _kind(fields[1]) == "String":
                name = str(fields[1].sval)
                if source.columns is None or name not in source.columns:
                    call = f"PostgreSQL would call a function {name}({table})"
                    raise self.refuse(f"{table}.{name} ({table} has no column {name}: {call})")
        else:
            raise self.refuse("a column named with its schema (name it table.column)")
        self.resolved.add(id(node))

    def indirection(self, node: Any, scope: Scope) -> None:
        self.expr(node.arg, scope)
        fields = self.composite(node.arg, scope)
        for step in node.indirection:
            kind = _kind(step)
            if kind == "A_Indices":
                self.expr(step.lidx, scope)
                self.expr(step.uidx, scope)
                fields = None
            elif kind == "String":
                name = str(step.sval)
                if fields is None or name not in fields:
                    raise self.refuse(f"the function {name} (written as a field: (…).{name})")
                fields = None
            elif fields is None:
                raise self.refuse("(…).* of a value that is not a row of a table")
        self.resolved.add(id(node))

    def composite(self, node: Any, scope: Scope) -> Columns:
        """The fields of a whole-row value (``m`` of ``FROM messages m``, ``json_each(...)``), else None."""
        kind = _kind(node)
        if kind == "ColumnRef" and len(node.fields) == 1 and _kind(node.fields[0]) == "String":
            name = str(node.fields[0].sval)
            if scope.is_column(name):
                return None
            source = scope.relation(name)
            return source.columns if source is not None else None
        if kind == "FuncCall" and _func_name(node) in RECORD_FUNCTIONS:
            return RECORD_FUNCTIONS[_func_name(node)]
        return None


class _Alias:
    def __init__(self, colnames: Any) -> None:
        self.colnames = colnames


def _func_name(call: Any) -> str:
    return plain_name([str(part.sval) for part in call.funcname])
