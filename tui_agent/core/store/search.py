"""Full-text search over messages: newest first, a page at a time, at a cost one page needs.

Order: recency with a relevance floor. A page holds the newest ``limit`` matching messages below a
cursor (message ids only grow, so newest = highest id), newest first; on the page, hits under the
relevance floor (a passing mention: BM25's term part, matches against length relative to the
page's average, under ``FLOOR``, e.g. one match in a text four times longer than the page's
average) come after the others, newest first too. Every hit of a page is newer than every hit of
the next page.

The walk: the index is read in windows of message ids going back from the cursor, the first of
512 ids, each next four times larger, until the page is full. A window is read in ascending rowid
order, where FTS5 seeks each word's list to the window's start; a descending read of a phrase
(and ``ORDER BY rank``, whose bm25 counts every match of every word once per query) walks the
whole list, so neither is used. A word found in every message fills the page from the first
window (512 ids); a rare word costs one seek per window. A phrase, ``NEAR`` or prefix of common
words costs about the same whatever the window's size: FTS5 reads their lists from the newest
message to the window (up to ~0.15 s for a million messages). So the walk times each window and
makes the next one as large as the time left can reach (the rest of the history if it can); it
stops when nothing more fits in the budget (0.1 s for a first page, typed as the user types; 0.5 s
for the pages after), and the page says how far back it looked (its cursor goes on from there).

Paging is keyset on the message id: ``before`` is the cursor of the page before, so the next page
neither repeats nor skips a hit and ranks nothing above it again.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

PAGE = 50
FIRST_WINDOW = 512
GROWTH = 4
BUDGET_S = 0.1  # a first page (as the user types)
MORE_BUDGET_S = 0.5  # the pages after it
SLOW_WINDOW_S = 0.005  # a window that took longer was a phrase's seek, not its matches
LONG_CHARS = 4_000  # longer messages: snippet and matches from their first PREFIX_CHARS, in Python
PREFIX_CHARS = 100_000
SNIPPET_CHARS = 90
K1, B = 1.2, 0.75
FLOOR = 0.5  # the relevance of one match in a message as long as the page's average is 1.0
# Word characters as FTS5's unicode61 tokenizer sees them (letters, digits; "_" separates).
_WORD = re.compile(r"[^\W_]", re.UNICODE)
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_PIECE = re.compile(r'"([^"]*)"?|(\S+)')
_BRACKETS = re.compile(r"[()\[\]{}]+")
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})  # FTS5's, typed as syntax: not searched for


class QueryError(ValueError):
    """The query has nothing to search for; the text says what to type instead."""


class SearchCancelled(Exception):
    """A newer search replaced this one."""


@dataclass(frozen=True)
class Hit:
    message_id: int
    conversation_id: int
    role: str
    snippet: str  # matched words in [brackets]; untrusted text: make it visible before showing it
    title: str
    created_at: str
    score: float


@dataclass(frozen=True)
class Page:
    hits: list[Hit]
    before: int | None  # the cursor of the next page (search again with before=this); None: no more
    searched_to: int  # the oldest message id looked at (1: the whole history was searched)
    complete: bool  # False: the time budget ran out before the page was full (``before`` goes on)


@dataclass(frozen=True)
class Term:
    """One thing to find: a word (``e-mail``: the words ``e`` and ``mail`` in a row), a quoted
    phrase, or (``prefix``) words starting with the last of its words."""

    text: str  # as typed, without the quotes, the leading "-" and the trailing "*"
    prefix: bool = False

    @property
    def words(self) -> list[str]:
        """Its words as the index sees them (letters and digits; the rest separates)."""
        return _WORDS.findall(self.text)


@dataclass(frozen=True)
class Query:
    """The user's words, parsed once: what each backend turns into its own safe expression."""

    wanted: tuple[Term, ...]  # every one must match
    excluded: tuple[Term, ...]  # none may match
    pattern: re.Pattern[str]  # the words to mark in a snippet made in Python
    costly: bool  # a phrase or a prefix (FTS5 reads their lists in a pass, not a seek)


def fts_query(text: str) -> str:
    """The user's words as a safe FTS5 expression: every word must match (in any order); a
    ``"quoted part"`` must match as a phrase; ``word*`` matches words starting with it; ``-word``
    excludes messages with it. FTS5's other syntax is not: AND, OR, NOT and NEAR in capitals and
    brackets are left out, a lone quote opens a phrase to the end, other punctuation separates
    words as in the index ("e-mail" is the phrase "e mail")."""
    return _fts_expression(parse(text))


def _fts_expression(query: Query) -> str:
    def fts(term: Term) -> str:
        return _string(term.text) + ("*" if term.prefix else "")

    expression = " AND ".join(fts(term) for term in query.wanted)
    if query.excluded:
        expression = f"({expression}) NOT ({' OR '.join(fts(term) for term in query.excluded)})"
    return expression


def parse(text: str) -> Query:
    """The user's words (see ``fts_query``); QueryError when nothing is left to search for."""
    wanted: list[Term] = []
    excluded: list[Term] = []
    shown: list[str] = []
    costly = False
    # NUL separates words, as any other non-word character (FTS5 read it as the end of the query)
    for quoted, bare in _PIECE.findall(text.replace("\x00", " ")):
        if quoted or not bare:
            if _WORD.search(quoted):
                wanted.append(Term(quoted))
                shown += [re.escape(w) for w in _WORDS.findall(quoted)]
                costly = costly or len(_WORDS.findall(quoted)) > 1
            continue
        for part in _BRACKETS.split(bare):  # "NEAR(a" and "f(x)": brackets group, they are not in words
            if part in _OPERATORS:
                continue
            negative = part.startswith("-") and len(part) > 1
            word = part.lstrip("-") if negative else part
            prefix = word.endswith("*")
            word = word.rstrip("*")
            costly = costly or prefix or len(_WORDS.findall(word)) > 1  # "e-mail" is a phrase
            if _WORD.search(word):
                (excluded if negative else wanted).append(Term(word, prefix))
                if not negative:
                    shown += [re.escape(w) + (r"[^\W_]*" if prefix else "") for w in _WORDS.findall(word)]
    if not wanted:
        if excluded:
            raise QueryError("a search needs a word to find, not only words to leave out (-word)")
        raise QueryError("type a word to search for (letters or digits)")
    words = "|".join(sorted(set(shown), key=len, reverse=True))
    pattern = re.compile(rf"(?<![^\W_])(?:{words})(?![^\W_])", re.IGNORECASE)
    return Query(tuple(wanted), tuple(excluded), pattern, costly)


def _string(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def search_page(
    conn: sqlite3.Connection,
    query: str,
    *,
    before: int | None = None,
    limit: int = PAGE,
    budget_s: float | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Page:
    """The page of hits for ``query`` among messages older than ``before`` (all when None).

    ``budget_s``: how long the walk may look (default: BUDGET_S for a first page, typed as the
    user types; MORE_BUDGET_S for the pages after, asked for one by one). Raises QueryError for a
    query with nothing to search for, SearchCancelled when ``cancelled`` answers True between reads."""
    parsed = parse(query)
    expression = _fts_expression(parsed)
    started = time.monotonic()
    top = conn.execute("SELECT max(id) FROM messages").fetchone()[0] or 0
    walked = walk(
        lambda low, high: _window(conn, expression, low, high), top, before, limit, budget_s, cancelled, started
    )
    # A phrase's or a prefix's page is not read through the index again (another pass): its
    # snippets are made here, from the messages.
    hits = _details(conn, None if parsed.costly else expression, parsed.pattern, walked.found)
    return walked.page(hits, limit)


@dataclass
class Walked:
    found: list[int]  # matching ids, newest first
    low: int  # the oldest id of the last window read
    high: int  # below the last window read (0: the whole history was read)

    def page(self, hits: list[Hit], limit: int) -> Page:
        found = self.found
        if len(found) >= limit:
            return Page(hits, found[-1] if found[-1] > 1 else None, found[-1], complete=True)
        if self.high < 1:
            return Page(hits, None, 1, complete=True)
        return Page(hits, self.low, self.low, complete=False)  # out of time: the next page goes on from ``low``


def walk(
    window: Callable[[int, int], list[int]],
    top: int,
    before: int | None,
    limit: int,
    budget_s: float | None,
    cancelled: Callable[[], bool],
    started: float,
) -> Walked:
    """The walk back from the cursor in windows of ids (see the module's text): ``window(low,
    high)`` gives the matching ids in [low, high] newest first; ``top``: the newest message id."""
    budget = budget_s if budget_s is not None else BUDGET_S if before is None else MORE_BUDGET_S
    high = min(top, before - 1) if before is not None else top
    found: list[int] = []
    size = FIRST_WINDOW
    low = high + 1
    while high >= 1 and len(found) < limit:
        if cancelled():
            raise SearchCancelled
        low = max(1, high - size + 1)
        window_started = time.monotonic()
        ids = window(low, high)
        found += ids[: limit - len(found)]
        high = low - 1
        now = time.monotonic()
        size = _next_window(size, now - window_started, budget - (now - started), top - low + 1, top - high)
        if size <= 0:
            break
    if cancelled():
        raise SearchCancelled
    return Walked(found, low, high)


def _next_window(size: int, took: float, left: float, reached: int, next_distance: int) -> int:
    """The next window's size; 0 when none fits in the time left.

    A window's cost grows with its matches for words, and with how far from the newest message it
    reaches for a phrase, NEAR or prefix (FTS5 reads their lists from there): ``took`` for a window
    that reached ``reached`` rows back says how far back the time ``left`` can reach. A slow window
    (a phrase's) makes the next one as large as fits, the rest of the history if it does; a fast one
    grows it four times."""
    if left <= 0:
        return 0
    wanted = 1 << 62 if took > SLOW_WINDOW_S else size * GROWTH
    if took <= 0:
        return wanted
    fits = int(left / took * reached) - next_distance
    if fits < min(wanted, FIRST_WINDOW):
        return 0
    return min(wanted, fits)


def _window(conn: sqlite3.Connection, expression: str, low: int, high: int) -> list[int]:
    """Matching message ids in [low, high], newest first."""
    try:
        rows = conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?",
            (expression, low, high),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise SearchCancelled from None
        raise QueryError(f"cannot search for that: {exc}") from None
    return sorted((r[0] for r in rows), reverse=True)


def _details(conn: sqlite3.Connection, expression: str | None, pattern: re.Pattern[str], ids: list[int]) -> list[Hit]:
    """Snippet, title, date and relevance of the page's hits: newest first, those under the floor last.

    FTS5's snippet() and highlight() cost the square of a message's matches (3,000 matches: 0.23 s,
    100,000 lines that each have the word: minutes), so a message longer than LONG_CHARS (or any,
    when ``expression`` is None) gets its snippet and its count of matches from its first
    PREFIX_CHARS, here."""
    if not ids:
        return []
    columns = (
        "SELECT m.id, m.conversation_id, m.role, coalesce(c.title, ''), m.created_at, length(m.content),"
        " CASE WHEN length(m.content) > :long THEN substr(m.content, 1, :prefix)"
        "  ELSE snippet(messages_fts, 0, '[', ']', '…', 12) END,"
        " CASE WHEN length(m.content) > :long THEN NULL ELSE"
        "  length(highlight(messages_fts, 0, char(1), ''))"
        "  - length(replace(highlight(messages_fts, 0, char(1), ''), char(1), '')) END"
    )
    where = " WHERE messages_fts MATCH :match AND f.rowid BETWEEN :low AND :high"
    sql = columns + " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
    params: dict[str, object] = {"long": LONG_CHARS, "prefix": PREFIX_CHARS, "match": expression}
    if expression is None:
        sql = (
            "SELECT m.id, m.conversation_id, m.role, coalesce(c.title, ''), m.created_at, length(m.content),"
            " substr(m.content, 1, :prefix), NULL FROM messages m"
        )
        where = f" WHERE m.id IN ({','.join(str(int(i)) for i in ids)})"
    try:
        # The page is a run of consecutive hits: every hit between its oldest and newest is on it.
        rows = conn.execute(
            sql + " LEFT JOIN conversations c ON c.id = m.conversation_id" + where,
            {**params, "low": ids[-1], "high": ids[0]},
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise SearchCancelled from None
        raise
    return hits_from(rows, pattern)


def hits_from(rows: Sequence[Sequence[Any]], pattern: re.Pattern[str]) -> list[Hit]:
    """Hits of (id, conversation id, role, title, created_at, length, snippet or the message's
    start, matches or None): newest first, those under the relevance floor last. A row without
    its matches gets its snippet and its matches from the message's start, here."""
    hits = []
    average = sum(max(1, r[5] or 0) for r in rows) / max(1, len(rows))
    for message_id, conversation_id, role, title, created_at, length, text, matches in rows:
        length = max(1, length or 0)
        if matches is None:  # a long message (or a phrase's, a prefix's): its first PREFIX_CHARS
            snippet, matches = _long_snippet(str(text), pattern, length)
        else:
            snippet = str(text)
        score = _relevance(max(1, int(matches)), length, average)
        hits.append(Hit(int(message_id), int(conversation_id), str(role), snippet, str(title), str(created_at), score))
    hits.sort(key=lambda h: (h.score < FLOOR, -h.message_id))
    return hits


def _long_snippet(text: str, pattern: re.Pattern[str], length: int) -> tuple[str, int]:
    """Some words around the first match in ``text`` (the start of a message of ``length``
    characters), the words marked as snippet() does, and how many matches ``text`` holds."""
    found = pattern.search(text)
    if found is None:  # further in (past the start read), or spelt otherwise (diacritics)
        more = f"… (a message of {length:,} characters)" if length > len(text) else "…" * (length > SNIPPET_CHARS)
        return text[:SNIPPET_CHARS].rstrip() + more, 1
    start = max(0, found.start() - SNIPPET_CHARS // 3)
    end = min(len(text), found.end() + SNIPPET_CHARS)
    if start:  # cut between words
        space = text.find(" ", start, found.start())
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", found.end(), end)
        end = space if space >= 0 else end
    shown = pattern.sub(lambda m: f"[{m.group(0)}]", text[start:end])
    return ("…" if start else "") + shown + ("…" if end < length else ""), len(pattern.findall(text))


def _relevance(matches: int, length: int, average: float) -> float:
    """BM25's term part: more matches count, with diminishing returns, against the length."""
    return matches * (K1 + 1) / (matches + K1 * (1 - B + B * length / average))
