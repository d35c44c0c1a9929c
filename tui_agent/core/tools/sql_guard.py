"""The memory_sql guard: what a statement may touch, checked before and while SQLite prepares it.

Two layers. ``precheck`` reads the statement's tokens and refuses names that could dodge the
hidden-row views: a CTE named like a real table or view (any case or quoting, however deep), and
any ``main.messages`` (``main.attachments``, ``main.message_revisions``). ``Guard`` is the SQLite
authorizer: deny by default; the real messages, attachments and message_revisions tables may be
read only from inside TEMP VIEWs whose names are random per run, so nothing the statement names
itself (a CTE, an UPDATE of the view) can pass for them. The views hide what PostgreSQL's hide
(core/store/pg_memory.py): ``memory_tool`` messages, and their attachments and revisions.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

HIDDEN_ROLE = "memory_tool"
READABLE_TABLES = frozenset({"conversations", "sqlite_master", "sqlite_schema"})
#: Tables read only through a TEMP VIEW of the same name that leaves out memory_sql's own rows.
HIDING_TABLES = ("messages", "attachments", "message_revisions")
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_offset"})
COLLECT_FUNCTION = "_memory_collect_update"
TRIGGER = "memory_collect_update"
SCHEMA_CHANGE = "changing the database schema"
ALLOWED = "memory_sql allows one SELECT (or WITH ... SELECT) or one UPDATE of messages.content"

# SQLite authorizer action codes (sqlite3.h) in words. Not derived from ``dir(sqlite3)``: the
# module's SQLITE_LIMIT_* and error codes share these numbers.
ACTION_WORDS: dict[int, str] = {
    0: "COPY",
    1: "CREATE INDEX",
    2: "CREATE TABLE",
    3: "CREATE TEMP INDEX",
    4: "CREATE TEMP TABLE",
    5: "CREATE TEMP TRIGGER",
    6: "CREATE TEMP VIEW",
    7: "CREATE TRIGGER",
    8: "CREATE VIEW",
    9: "DELETE FROM",
    10: "DROP INDEX",
    11: "DROP TABLE",
    12: "DROP TEMP INDEX",
    13: "DROP TEMP TABLE",
    14: "DROP TEMP TRIGGER",
    15: "DROP TEMP VIEW",
    16: "DROP TRIGGER",
    17: "DROP VIEW",
    18: "INSERT INTO",
    19: "PRAGMA",
    20: "reading",
    21: "SELECT",
    22: "a transaction statement",
    23: "UPDATE of",
    24: "ATTACH",
    25: "DETACH",
    26: "ALTER TABLE",
    27: "REINDEX",
    28: "ANALYZE",
    29: "CREATE VIRTUAL TABLE",
    30: "DROP VIRTUAL TABLE",
    31: "the function",
    32: "SAVEPOINT",
    33: "WITH RECURSIVE",
}


def setup_script(secret_views: dict[str, str]) -> str:
    """Temp objects of one guarded connection: ``messages`` (``attachments``, ``message_revisions``)
    reads through its secret view, which leaves out memory_sql's rows (and their attachments and
    revisions)."""
    visible = f"SELECT id FROM main.messages WHERE role IS NOT '{HIDDEN_ROLE}'"
    m, a, r = (secret_views[table] for table in HIDING_TABLES)
    return f"""
CREATE TEMP VIEW {m} AS SELECT * FROM main.messages WHERE role IS NOT '{HIDDEN_ROLE}';
CREATE TEMP VIEW messages AS SELECT * FROM temp.{m};
CREATE TEMP VIEW {a} AS SELECT * FROM main.attachments WHERE message_id IN ({visible});
CREATE TEMP VIEW attachments AS SELECT * FROM temp.{a};
CREATE TEMP VIEW {r} AS SELECT * FROM main.message_revisions WHERE message_id IN ({visible});
CREATE TEMP VIEW message_revisions AS SELECT * FROM temp.{r};
CREATE TEMP TRIGGER {TRIGGER} INSTEAD OF UPDATE OF content ON messages
BEGIN SELECT {COLLECT_FUNCTION}(OLD.id, OLD.content, NEW.content); END;
"""


class QueryRefused(Exception):
    """The statement may not run, or stopped; the text is the one-line reason for the model."""


@dataclass(frozen=True)
class Token:
    kind: str  # "name" (bare or quoted identifier / keyword), "string", "number", "op"
    text: str  # for names: unquoted; for ops: the character(s)
    quoted: bool = False

    @property
    def word(self) -> str:
        return self.text.casefold()


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<line>--[^\n]*)
  | (?P<block>/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*'?)
  | (?P<dq>"(?:[^"]|"")*"?)
  | (?P<bq>`(?:[^`]|``)*`?)
  | (?P<br>\[[^\]]*\]?)
  | (?P<blob>[xX]'[^']*'?)
  | (?P<number>\d[\w.]*|\.\d[\w.]*)
  | (?P<name>[^\W\d][\w$]*)
  | (?P<param>[?:@$][\w]*)
  | (?P<op>\|\||<<|>>|<=|>=|==|!=|<>|->>|->|.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(sql: str) -> Iterator[Token]:
    """SQLite's tokens, comments and white space dropped; quoted identifiers unquoted."""
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "op"
        text = match.group()
        if kind in ("space", "line", "block"):
            continue
        if kind == "dq":
            yield Token("name", text[1:-1].replace('""', '"') if text.endswith('"') else text[1:], True)
        elif kind == "bq":
            yield Token("name", text[1:-1].replace("``", "`") if text.endswith("`") else text[1:], True)
        elif kind == "br":
            yield Token("name", text[1:-1] if text.endswith("]") else text[1:], True)
        elif kind in ("string", "blob", "number", "param"):
            yield Token("string" if kind != "number" else "number", text)
        else:
            yield Token(kind, text)


def cte_names(toks: list[Token]) -> Iterator[str]:
    """Every name a WITH clause defines, at any depth (subqueries, EXISTS, triggers of UPDATE)."""
    for start, tok in enumerate(toks):
        if tok.kind != "name" or tok.quoted or tok.word != "with":
            continue
        i = start + 1
        if i < len(toks) and toks[i].kind == "name" and not toks[i].quoted and toks[i].word == "recursive":
            i += 1
        while i < len(toks) and toks[i].kind == "name":
            yield toks[i].text
            i += 1
            if i < len(toks) and toks[i].text == "(":
                i = _skip_parens(toks, i)
            # AS [NOT] [MATERIALIZED] ( select )
            while i < len(toks) and toks[i].kind == "name" and not toks[i].quoted:
                i += 1
            if i < len(toks) and toks[i].text == "(":
                i = _skip_parens(toks, i)
            if i < len(toks) and toks[i].text == ",":
                i += 1
                continue
            break


def _skip_parens(toks: list[Token], i: int) -> int:
    depth = 0
    while i < len(toks):
        if toks[i].text == "(" and toks[i].kind == "op":
            depth += 1
        elif toks[i].text == ")" and toks[i].kind == "op":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def names_main_table(toks: list[Token]) -> str:
    """The hiding table the statement spells as ``main.X`` (any case, quoting or spacing), else ""."""
    for i in range(len(toks) - 2):
        a, dot, b = toks[i], toks[i + 1], toks[i + 2]
        if a.kind == "name" and a.word == "main" and dot.text == "." and b.kind == "name" and b.word in HIDING_TABLES:
            return b.word
    return ""


def precheck(sql: str, protected: Iterable[str]) -> None:
    """Refuse what the authorizer cannot tell apart; raise QueryRefused with the reason in words."""
    toks = list(tokens(sql))
    if not toks:
        raise QueryRefused("missing parameter: query (it is empty)")
    shielded = {name.casefold() for name in protected}
    for name in cte_names(toks):
        folded = name.casefold()
        if folded in shielded or folded.startswith("sqlite_"):
            raise QueryRefused(
                f"refused: a WITH clause may not define a name that hides a table or view ({name}); "
                "pick another name for the CTE"
            )
    table = names_main_table(toks)
    if table:
        raise QueryRefused(f"refused: main.{table} cannot be read; use {table} (memory_sql's own rows are hidden)")


def first_keywords(sql: str, count: int = 1) -> str:
    """The statement's first bare words, upper-cased (``DROP VIEW``); never quoted text."""
    words: list[str] = []
    for tok in tokens(sql):
        if tok.kind != "name" or tok.quoted or len(words) == count:
            break
        words.append(tok.text.upper()[:20])
    return " ".join(words)


class Guard:
    """The authorizer: deny by default and remember, in words, the first thing refused."""

    def __init__(self, secret_views: dict[str, str]) -> None:
        self.secret_views = {view.casefold() for view in secret_views.values()}
        self.denied = ""
        self.wrote = False

    def __call__(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, source: str | None) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        table = (arg1 or "").casefold()
        if action == sqlite3.SQLITE_READ:
            if dbname is None:  # a CTE or subquery (count(*) over it): its own reads were checked
                return sqlite3.SQLITE_OK
            if dbname == "temp" and (table in HIDING_TABLES or table in self.secret_views):
                return sqlite3.SQLITE_OK
            if table in HIDING_TABLES and dbname == "main" and (source or "").casefold() in self.secret_views:
                return sqlite3.SQLITE_OK
            if table in READABLE_TABLES:
                return sqlite3.SQLITE_OK
            if table in HIDING_TABLES:
                return self._deny(f"reading main.{table} (use {table}; memory_sql's own rows are hidden)")
            return self._deny(f"reading {arg1}")
        if action == sqlite3.SQLITE_UPDATE:
            if table == "messages" and (arg2 or "").casefold() == "content" and dbname == "temp":
                self.wrote = True
                return sqlite3.SQLITE_OK
            return self._deny(f"UPDATE of {arg1}.{arg2} (only messages.content may change)")
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").casefold()
            if name == COLLECT_FUNCTION.casefold():
                if (source or "").casefold() == TRIGGER:
                    return sqlite3.SQLITE_OK
                return self._deny(f"the function {arg2}")
            if name in DENIED_FUNCTIONS:
                return self._deny(f"the function {arg2}")
            return sqlite3.SQLITE_OK
        return self._deny(describe(action, arg1, arg2))

    def _deny(self, what: str) -> int:
        self.denied = self.denied or what
        return sqlite3.SQLITE_DENY


def describe(action: int, arg1: str | None, arg2: str | None) -> str:
    """An authorizer request in words, e.g. ``DROP VIEW messages`` or ``PRAGMA user_version``."""
    words = ACTION_WORDS.get(action, f"SQLite action {action}")
    if action in (sqlite3.SQLITE_DELETE, sqlite3.SQLITE_INSERT) and (arg1 or "").casefold() in SCHEMA_TABLES:
        return SCHEMA_CHANGE
    if action == sqlite3.SQLITE_TRANSACTION:
        return f"a transaction statement ({arg1})" if arg1 else words
    if action in (sqlite3.SQLITE_ATTACH,):
        return f"{words} (attaching databases)"
    target = arg1 or ""
    if action in (sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_CREATE_TEMP_INDEX, sqlite3.SQLITE_DROP_INDEX) and arg2:
        target = f"{arg1} ON {arg2}"
    if action == sqlite3.SQLITE_CREATE_VTABLE and arg2:
        target = f"{arg1} USING {arg2}"
    if action == sqlite3.SQLITE_PRAGMA and arg2:
        target = f"{arg1} = {arg2}"
    return f"{words} {target}".strip()


def refusal(guard: Guard, sql: str) -> str:
    """The one-line reason an authorizer refusal gives the model."""
    keyword = first_keywords(sql, 2 if guard.denied == SCHEMA_CHANGE else 1)
    if guard.denied == SCHEMA_CHANGE and keyword:
        what = f"{keyword} ({SCHEMA_CHANGE})"
    else:
        what = guard.denied or (f"{keyword} statements" if keyword else "this statement")
    return f"refused: {what} is not allowed; {ALLOWED}"
