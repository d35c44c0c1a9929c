"""History search on PostgreSQL: the same words, order, pages and hits as ``search`` (FTS5), read
through the GIN index ``messages_search`` on ``to_tsvector('simple', content)`` (``VECTOR``).

The query: the words parsed once (``search.parse``) become a tsquery built here, never the user's
text read as tsquery syntax. Each word is quoted (a word holds only letters and digits, so the
quote cannot be closed from inside it): a word's words in a row are a phrase (``'e' <-> 'mail'``),
``word*`` a prefix (``'word':*``), ``-word`` a negation (``!``). A word typed with punctuation
(``example.com``, ``3.14``) may be one word to PostgreSQL's parser, which keeps host names, e-mail
addresses, paths and dotted numbers whole: such a part also matches as PostgreSQL parses it
(``phraseto_tsquery``, which takes plain text, not syntax).

The walk is ``search``'s (windows of ids back from the cursor within a time budget, keyset pages).
A window is ``VECTOR @@ query AND id BETWEEN low AND high``: PostgreSQL's
planner takes the GIN index for a rare word (a bitmap of its messages, ANDed with the id range)
and, for a word in most messages, reads the window and checks each message; the first window
stops at the page's end (see FIRST_WINDOW_SQL). Snippets and relevance come from each message's start, in
Python (as SQLite's do for a phrase or a long message), so the marks are the same.

``search_page`` takes a psycopg connection in autocommit mode (peewee's, or ``connect``'s).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tui_agent.core.store import search
from tui_agent.core.store.location import StoreURL
from tui_agent.core.store.search import PAGE, Page, Query, QueryError, SearchCancelled, Term

# The expression of the index messages_search (pg_migrations P4): to_tsvector('simple', content),
# or of the message's start for the rare message whose words do not fit in a tsvector.
VECTOR = "tui_agent_words(content)"
MAX_WORD_BYTES = 2047  # longer words are left out of a tsvector: never found
WINDOW_SQL = f"SELECT id FROM messages WHERE {VECTOR} @@ %s::tsquery AND id BETWEEN %s AND %s"
# A first window (FIRST_WINDOW ids) stops at the page's end: a word in most messages is then
# checked in the newest ~50 messages (0.6 ms), not in all 512 of the window (6 ms, ~30 under load).
# Not for larger windows: with a LIMIT the planner reads a window newest first, checking each
# message, whenever it guesses the page fills before the window's end, and a prefix's guess (or a
# word's that was common long ago) is often wrong: 8,192 messages checked one by one for 9 hits.
FIRST_WINDOW_SQL = WINDOW_SQL + " ORDER BY id DESC LIMIT %s"
DETAILS_SQL = (
    "SELECT m.id, m.conversation_id, m.role, coalesce(c.title, ''), m.created_at, length(m.content),"
    " substr(m.content, 1, %s), NULL FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id"
    " WHERE m.id = ANY(%s)"
)


def tsquery_sql(query: Query) -> tuple[str, list[str]]:
    """SQL for the tsquery of ``query`` and its parameters (the user's text only ever as a quoted
    word or as ``phraseto_tsquery``'s plain text)."""
    params: list[str] = []

    def term(t: Term) -> str:
        words = "'" + "' <-> '".join(t.words) + "'" + (":*" if t.prefix else "")
        params.append(words)
        if t.prefix or t.text == "".join(t.words):
            return "to_tsquery('simple', %s)"
        params.append(t.text)  # "example.com": also as PostgreSQL's parser reads it
        return "(to_tsquery('simple', %s) || phraseto_tsquery('simple', %s))"

    sql = " && ".join(term(t) for t in query.wanted)
    if query.excluded:
        sql = f"({sql}) && !!({' || '.join(term(t) for t in query.excluded)})"
    return sql, params


def _findable(query: Query) -> Query | None:
    """``query`` without what no tsvector holds (words over MAX_WORD_BYTES: excluded ones never
    match anyway); None when a wanted word is one of those (nothing can match)."""
    if any(len(w.encode()) > MAX_WORD_BYTES for t in query.wanted for w in t.words):
        return None
    excluded = tuple(t for t in query.excluded if all(len(w.encode()) <= MAX_WORD_BYTES for w in t.words))
    return Query(query.wanted, excluded, query.pattern, query.costly)


def search_page(
    conn: Any,
    query: str,
    *,
    before: int | None = None,
    limit: int = PAGE,
    budget_s: float | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Page:
    """``search.search_page`` on PostgreSQL (the same arguments, the same page)."""
    import psycopg

    parsed = search.parse(query)
    findable = _findable(parsed)
    started = time.monotonic()
    try:
        with conn.cursor() as cursor:
            if findable is None:
                return Page([], None, 1, complete=True)
            expression, params = tsquery_sql(findable)
            cursor.execute(f"SELECT (SELECT max(id) FROM messages), ({expression})::text", params)
            top, tsquery = cursor.fetchone()

            def window(low: int, high: int) -> list[int]:
                # Never a prepared statement: a generic plan does not know the words (nor how common they are).
                if high - low < search.FIRST_WINDOW:
                    cursor.execute(FIRST_WINDOW_SQL, (tsquery, low, high, limit), prepare=False)
                else:
                    cursor.execute(WINDOW_SQL, (tsquery, low, high), prepare=False)
                return sorted((int(row[0]) for row in cursor.fetchall()), reverse=True)

            walked = search.walk(window, int(top or 0), before, limit, budget_s, cancelled, started)
            rows: list[Any] = []
            if walked.found:
                cursor.execute(DETAILS_SQL, (search.PREFIX_CHARS, walked.found))
                rows = cursor.fetchall()
    except psycopg.errors.QueryCanceled:
        raise SearchCancelled from None
    except psycopg.errors.SyntaxError as exc:  # not expected: the tsquery is built here
        raise QueryError(f"cannot search for that: {str(exc).splitlines()[0]}") from None
    return walked.page(search.hits_from(rows, parsed.pattern), limit)


def connect(url: StoreURL) -> Any:
    """A read-only psycopg connection of its own to the store at ``url`` (the palette's searcher)."""
    import psycopg

    from tui_agent.core.store.pg import CONNECT_TIMEOUT_S

    conn = psycopg.connect(
        dbname=url.dbname,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        application_name="tui-agent search",
        **url.connect_args(),
    )
    conn.execute("SET default_transaction_read_only = on")
    return conn
