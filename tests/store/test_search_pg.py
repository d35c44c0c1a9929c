"""History search on PostgreSQL (issue 27): the same hits as SQLite for the same simple queries,
through the GIN index, and a cancelled search stops on the server."""

from __future__ import annotations

import asyncio
import contextlib
import re

import psycopg
import pytest
from backends import BOTH_BACKENDS
from history_filler import fill_store
from pilot_helpers import until

from tui_agent.core.store import history, location, search_pg
from tui_agent.core.store import search as store_search
from tui_agent.core.store.db import open_store
from tui_agent.core.store.models import Message

ONLY_POSTGRESQL = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)

ROWS = {
    "Rodents": [
        ("user", "The capybara is the largest rodent"),
        ("assistant", "A CAPYBARA swims; capybaras are social."),
        ("user", "ocelot, margay and capybara"),
    ],
    "Mail": [
        ("user", "send me an e-mail please"),
        ("assistant", "email is fine, or e mail"),
        ("user", "write to example.com or 3.14 now"),
    ],
    "Unicode": [
        ("user", "Привет, мир! ПРИВЕТ снова"),
        ("assistant", "日本語の文章 and Ελληνικά γράμματα"),
        ("user", "Ärger über die Straße"),
        ("assistant", "🦫 capybara emoji 🦫"),
    ],
    "Operators": [
        ("user", "near the river or the lake"),
        ("assistant", "not now, and not here"),
        ("user", "lorem ipsum dolor sit amet"),
        ("assistant", "ipsum lorem reversed"),
        ("tool", "x=1;y=2 (C++ and C#) don't stop"),
    ],
}

QUERIES = [
    # words, case, prefix, exclusion, phrases
    *("capybara", "CAPYBARA", "capy*", "capybara -ocelot", "rodent capybara", '"largest rodent"'),
    *('"rodent largest"', "lorem ipsum", '"lorem ipsum"', '"ipsum lorem"', "lor*", "ipsum -dolor", "-lorem ipsum"),
    # punctuation
    *("e-mail", "email", '"e mail"', "example.com", "3.14", "don't", "C++", "x=1", "y"),
    # unicode
    *("привет", "ПРИВЕТ", "мир", "日本語の文章", "Ελληνικά", "γράμματα", "ärger", "Straße", "🦫 capybara"),
    # FTS5's operators typed, and words that are operators elsewhere
    *("near", "NEAR", "NEAR(river", "river OR lake", "not", "NOT now", "and", "AND", "or"),
    # PostgreSQL's tsquery syntax and other hostile text
    *("'):*|!&<->", "'lorem'", "lorem:*", "!lorem", "lorem & ipsum", "lorem | ipsum", "lorem <-> ipsum"),
    *('"lorem <-> ipsum"', "\\'", "lorem\x00ipsum", '"', "*", "-", "x" * 3000, "lorem " + "y" * 3000),
]
_MARKED = re.compile(r"\[([^\]]+)\]")
_WORDS = re.compile(r"[^\W_]+")


def results() -> dict[str, object]:
    """Each query's hits (id, conversation, role, title, the words marked in the snippet), or its error."""
    found: dict[str, object] = {}
    for query in QUERIES:
        try:
            page = history.search(query)
        except store_search.QueryError as exc:
            found[query] = f"error: {exc}"
            continue
        found[query] = [
            (
                h.message_id,
                h.conversation_id,
                h.role,
                h.title,
                sorted({w.lower() for m in _MARKED.findall(h.snippet) for w in _WORDS.findall(m)}),
            )
            for h in page.hits
        ]
    return found


def fill() -> None:
    for title, messages in ROWS.items():
        conversation = history.new_conversation(title)
        for role, text in messages:
            history.add_message(conversation.id, role, text)


def test_the_same_queries_find_the_same_hits_on_both_backends(tmp_path, pg_url):
    sqlite_db = open_store(location.parse(f"sqlite:///{tmp_path / 'agent.db'}"))
    try:
        fill()
        on_sqlite = results()
    finally:
        sqlite_db.close()
    postgres_db = open_store(location.parse(pg_url))
    fill()
    on_postgresql = results()
    postgres_db.close()
    for query in QUERIES:
        assert on_postgresql[query] == on_sqlite[query], repr(query)
    answered = [q for q in QUERIES if isinstance(on_sqlite[q], list) and on_sqlite[q]]
    assert len(answered) >= 40, answered  # most queries find something: the comparison means something
    assert on_sqlite["'):*|!&<->"] == "error: type a word to search for (letters or digits)"


@ONLY_POSTGRESQL
def test_a_window_reads_the_gin_index(env, monkeypatch):
    """A rare word's window is a bitmap of the index messages_search (ANDed with the id range),
    not a pass over the messages that computes each one's words."""
    from tui_agent.core.store import search as store_search

    monkeypatch.setattr(store_search, "BUDGET_S", 600.0)  # a full page whatever the machine's load
    fill_store(20_000)
    tsquery = "'quasar'"
    with Message._meta.database.connection().cursor() as cursor:
        cursor.execute("EXPLAIN " + search_pg.WINDOW_SQL, (tsquery, 1, 20_000), prepare=False)
        plan = "\n".join(r[0] for r in cursor.fetchall())
    assert "Bitmap Index Scan on messages_search" in plan, plan
    page = history.search("quasar")
    assert len(page.hits) == 20 and page.complete and page.before is None


@ONLY_POSTGRESQL
async def test_a_cancelled_search_stops_on_the_server(env, pg_url):
    """The palette cancels a search at the next key: on PostgreSQL the statement running is
    cancelled on the server too (here one waiting behind a lock), not left to run to its end."""
    from tui_agent.ui.history_search import Searcher

    conversation = history.new_conversation("locks")
    message = history.add_message(conversation.id, "user", "the capybara waits")
    searcher = Searcher()
    with psycopg.connect(pg_url, autocommit=True) as watcher, psycopg.connect(pg_url) as blocker:

        def search_backend() -> tuple[str, str | None] | None:
            row = watcher.execute(
                "SELECT state, wait_event_type FROM pg_stat_activity WHERE application_name = 'tui-agent search'"
            ).fetchone()
            return None if row is None else (row[0], row[1])

        blocker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")
        task = asyncio.ensure_future(searcher.page("capybara"))
        await until(None, lambda: search_backend() == ("active", "Lock"))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await until(None, lambda: search_backend() == ("idle", "Client"))  # while the lock is still held
        blocker.rollback()
    page = await searcher.page("capybara")
    assert [h.message_id for h in page.hits] == [message.id]
    searcher.close()


@BOTH_BACKENDS
def test_a_message_too_wordy_for_a_tsvector_is_stored_and_found(env):
    """150,000 distinct words (1.35 MB: a long log, a table of ids) are more than a tsvector holds
    (1 MB): PostgreSQL refused to store the message ("string is too long for tsvector"), the search
    index being on its words. It is stored, and found by its start."""
    conversation = history.new_conversation("ids")
    text = " ".join(f"w{i:07d}" for i in range(150_000))
    message = history.add_message(conversation.id, "tool", text)
    assert Message.get_by_id(message.id).content == text
    (hit,) = history.search("w0000042").hits
    assert hit.message_id == message.id and "[w0000042]" in hit.snippet


def test_the_search_index_upgrade_keeps_the_messages_searchable(pg_url):
    """A database set up before P4 (the index on to_tsvector itself) is upgraded: the index is
    rebuilt on tui_agent_words, the messages stay and are found."""
    from tui_agent.core.store import pg_migrations

    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert pg_migrations.migrate(conn, 3) == 3
        conn.execute("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (1, 'old', 'x', 'x')")
        conn.execute(
            "INSERT INTO messages (id, conversation_id, role, content, created_at)"
            " VALUES (1, 1, 'user', 'the old capybara', 'x')"
        )
    db = open_store(location.parse(pg_url))
    with db.connection().cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_search'")
        assert "tui_agent_words(content)" in cursor.fetchone()[0]
        assert pg_migrations.current_version(db.connection()) == pg_migrations.LATEST
    assert [h.message_id for h in history.search("capybara").hits] == [1]
