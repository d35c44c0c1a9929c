"""History search (issue 30): newest first with a relevance floor, title and date on each hit,
keyset pages, a cost that does not grow with the matches, and any query text answered."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from typing import Any

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from history_filler import QUASAR_EVERY, fill_store

from tui_agent.core.store import backends, history, search_pg
from tui_agent.core.store import search as store_search
from tui_agent.core.store.models import Message
from tui_agent.core.tools.sql_update import apply_updates

FILLED = 20_000


@pytest.fixture
def filled(env):
    fill_store(FILLED)
    return env


def on_postgresql() -> bool:
    return backends.current().name == "PostgreSQL"


def conn() -> Any:
    return Message._meta.database.connection()


def search_page(query: str, connection: Any = None, **kwargs: Any) -> store_search.Page:
    """The backend's search_page on the bound store (or on ``connection``). Its time budget (0.1 s for
    a first page) is the tests' own, far from any machine's speed, unless the test sets one: under
    two CPU burners a first page of a filled store ran out of time before it was full."""
    module = search_pg if on_postgresql() else store_search
    kwargs.setdefault("budget_s", 600.0)
    return module.search_page(connection or conn(), query, **kwargs)


def every_match(query: str) -> list[int]:
    """All matching ids, newest first, the plain way (the reference for the pages)."""
    if on_postgresql():
        expression, params = search_pg.tsquery_sql(store_search.parse(query))
        with conn().cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM messages WHERE {search_pg.VECTOR} @@ ({expression}) ORDER BY id DESC", params
            )
            return [r[0] for r in cursor.fetchall()]
    rows = conn().execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC",
        (store_search.fts_query(query),),
    )
    return [r[0] for r in rows]


@BOTH_BACKENDS
def test_newest_first_with_title_and_date(env):
    old = history.new_conversation("Rodents of South America")
    first = history.add_message(old.id, "user", "the capybara is the largest rodent")
    new = history.new_conversation("Zoo trip")
    history.add_message(new.id, "user", "no match here")
    second = history.add_message(new.id, "assistant", "we saw a capybara at the zoo")
    page = search_page("capybara")
    assert [h.message_id for h in page.hits] == [second.id, first.id]
    newest = page.hits[0]
    assert (newest.title, newest.conversation_id, newest.role) == ("Zoo trip", new.id, "assistant")
    assert newest.created_at == Message.get_by_id(second.id).created_at
    assert page.hits[1].title == "Rodents of South America"
    assert "[capybara]" in newest.snippet
    assert page.before is None and page.complete


@BOTH_BACKENDS
def test_a_passing_mention_in_a_long_text_goes_under_the_floor(env):
    """On a page, a message that mentions the word once in a long text (a tool's dump) comes after
    the messages about it, even when it is newer; each group newest first."""
    conversation = history.new_conversation("notes")
    about = [history.add_message(conversation.id, "user", f"capybara note {i}: capybara habits").id for i in range(5)]
    dump = history.add_message(conversation.id, "tool", "filler text " * 2_000 + "capybara").id
    newest = history.add_message(conversation.id, "assistant", "a capybara swims").id
    ids = [h.message_id for h in search_page("capybara").hits]
    assert ids == [newest, *reversed(about), dump]
    scores = {h.message_id: h.score for h in search_page("capybara").hits}
    assert scores[dump] < store_search.FLOOR <= min(scores[i] for i in about)


@pytest.mark.parametrize("query, limit", [("lorem", 50), ("quasar", 6), ("lorem quasar", 3)])
@BOTH_BACKENDS
def test_pages_follow_each_other_without_overlap_or_gap(filled, query, limit):
    expected = every_match(query)[: limit * 3]
    seen: list[int] = []
    before = None
    for _ in range(3):
        page = search_page(query, before=before, limit=limit)
        assert len(page.hits) == limit and page.complete
        seen += sorted((h.message_id for h in page.hits), reverse=True)
        before = page.before
    assert seen == expected


@BOTH_BACKENDS
def test_the_last_page_says_there_is_no_more(filled):
    expected = every_match("quasar")
    assert len(expected) == FILLED // QUASAR_EVERY
    first = search_page("quasar", limit=15)
    last = search_page("quasar", before=first.before, limit=15)
    assert [h.message_id for h in first.hits + last.hits] == expected
    assert last.before is None and last.complete and last.searched_to == 1


@BOTH_BACKENDS
def test_a_page_out_of_time_says_how_far_it_looked_and_the_next_goes_on_from_there(filled):
    """With no time at all, each page looks at one window: the pages still add up to every match."""
    seen: list[int] = []
    before = None
    pages = 0
    while True:
        page = search_page("quasar", before=before, budget_s=0)
        pages += 1
        seen += [h.message_id for h in page.hits]
        if page.before is None:
            break
        assert not page.complete and page.searched_to == page.before
        assert all(h.message_id >= page.searched_to for h in page.hits)
        before = page.before
    assert seen == every_match("quasar")
    assert pages > 2 and page.complete


def test_a_common_word_does_not_visit_every_match(filled):
    """'lorem' is in all 20,000 messages. Ranking all of them (ORDER BY rank, as before) runs the
    VM over every match; the first page visits a window of the index and the page. SQLite only:
    it counts SQLite's VM steps (PostgreSQL's plan is checked by test_search_pg)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    c = conn()
    c.set_progress_handler(count, 1)
    try:
        page = search_page("lorem")
        visited = steps
        steps = 0
        c.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'lorem' ORDER BY rank LIMIT 50").fetchall()
        ranked = steps
    finally:
        c.set_progress_handler(None, 0)
    assert len(page.hits) == 50
    assert ranked > FILLED  # the counter sees a walk over every match
    assert visited < store_search.FIRST_WINDOW * 20 < FILLED, (visited, ranked)


HOSTILE = [
    '"',
    '""',
    '"lorem',
    'lorem"',
    'a"b"c',
    "NEAR(lorem",
    "NEAR(lorem ipsum, 2)",
    "NEAR",
    "lor*",
    "*",
    "**lorem",
    "-",
    "--",
    "-lorem",
    "lorem -ipsum",
    "lorem -",
    "(",
    ")",
    "((lorem",
    "lorem)",
    "AND",
    "OR lorem",
    "lorem NOT",
    "NOT lorem",
    "^lorem",
    "content:lorem",
    "{content}: lorem",
    "'",
    "\\",
    "lorem\x00ipsum",
    "🦫 lorem",
    "+lorem",
    "lorem OR",
    ":",
    "x" * 5000,
]


FINDS_LOREM = {'"lorem', 'lorem"', "NEAR(lorem", "lor*", "**lorem", "((lorem", "lorem)", "OR lorem", "^lorem", "+lorem"}
FINDS_LOREM |= {"lorem NOT", "NOT lorem", "🦫 lorem", "lorem OR", "lorem -"}


@BOTH_BACKENDS
def test_any_query_text_gives_hits_or_a_clear_message(env):
    conversation = history.new_conversation("syntax")
    for text in ("lorem ipsum dolor", "ipsum content lorem near", "just ipsum"):
        history.add_message(conversation.id, "user", text)
    for query in HOSTILE:
        try:
            page = search_page(query)
        except store_search.QueryError as exc:
            message = str(exc)
            assert message and "\n" not in message and "fts5" not in message.lower(), query
            continue
        assert all(isinstance(h.message_id, int) for h in page.hits), query
        if query in FINDS_LOREM:
            assert any(h.snippet.startswith("[lorem]") for h in page.hits), query
    # FTS5's column filter is not one here: the words are searched for
    assert search_page("content:lorem").hits[0].snippet == "ipsum [content] [lorem] near"


@BOTH_BACKENDS
def test_quotes_star_and_minus_mean_phrase_prefix_and_not(filled):
    assert search_page('"lorem ipsum"').hits
    assert not search_page('"ipsum lorem"').hits  # both words everywhere, never so
    assert search_page("quasa*").hits[0].message_id == every_match("quasar")[0]
    without = search_page("lorem -quasar", limit=2000, budget_s=60).hits  # a page of 2,000 whatever the load
    assert len(without) == 2000 and not {h.message_id for h in without} & set(every_match("quasar"))
    with pytest.raises(store_search.QueryError, match="not only words to leave out"):
        search_page("-lorem")


@BOTH_BACKENDS
def test_a_reply_of_100000_lines_that_each_have_the_word_answers_at_once(env):
    """FTS5's snippet() and highlight() cost the square of a message's matches: this reply (the
    bench's huge reply) took ~2 minutes to show as a hit. Long messages get their snippet from
    their start, in Python. A hang guard, not a timing: the search runs in a thread."""
    conversation = history.new_conversation("huge")
    huge = history.add_message(
        conversation.id, "assistant", "".join(f"row {i} of a huge reply\n" for i in range(100_000))
    )
    history.add_message(conversation.id, "user", "a short row")
    db = Message._meta.database
    pages: list[store_search.Page] = []

    def run() -> None:
        own = search_pg.connect(db.store_url) if on_postgresql() else sqlite3.connect(db.database)
        with own:
            pages.append(search_page("row", own))
            pages.append(search_page("99999", own))  # past the start that is read

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the search of a 100,000-line reply did not end within a minute"
    rows, late = pages
    assert [h.message_id for h in rows.hits][1] == huge.id
    assert rows.hits[1].snippet.startswith("[row] 0 of a huge reply\n[row] 1 of a huge reply")
    assert rows.hits[1].snippet.endswith("…")
    (hit,) = late.hits
    assert hit.message_id == huge.id and hit.snippet.endswith("… (a message of 2,588,890 characters)")


@BOTH_BACKENDS
def test_a_long_message_is_marked_around_its_first_match(env):
    conversation = history.new_conversation("long")
    text = "filler words here. " * 300 + "The Capybara swims. " + "more filler. " * 300
    history.add_message(conversation.id, "user", text)
    (hit,) = search_page("capybara").hits
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert "The [Capybara] swims." in hit.snippet and len(hit.snippet) < 200


@BOTH_BACKENDS
def test_search_follows_memory_sql_updates_and_deletes(env):
    """The index follows the messages whatever writes them: memory_sql's approved UPDATE (with its
    revision), an edit, a deleted conversation; FTS5's own check agrees with the table (SQLite:
    PostgreSQL's index is on the table's own column, nothing to drift)."""
    conversation = history.new_conversation("edits")
    message = history.add_message(conversation.id, "user", "the ocelot sleeps")
    assert apply_updates([(message.id, "the margay climbs")]) == [message.id]
    assert not search_page("ocelot").hits
    assert [h.message_id for h in search_page("margay").hits] == [message.id]
    check_index()
    history.delete_conversation(conversation.id)
    assert not search_page("margay").hits
    check_index()


def check_index() -> None:
    if not on_postgresql():
        conn().execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


def cli(env, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), "history", "search", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@BOTH_BACKENDS
def test_cli_prints_a_page_with_dates_and_titles_and_the_next_page_command(filled):
    first = cli(filled, "lorem")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == store_search.PAGE
    message_id, date, conversation, role, snippet = lines[0].split("\t")
    newest = Message.get_by_id(int(message_id))
    assert int(message_id) == every_match("lorem")[0]
    assert date == newest.created_at[:16] and conversation == f"conversation {newest.conversation_id}: topic 80"
    assert role == newest.role and "[lorem]" in snippet
    more = first.stderr.strip()
    assert more.startswith("more: tui-agent history search lorem --before "), more
    second = cli(filled, "lorem", "--before", more.rsplit(" ", 1)[1])
    ids = [int(line.split("\t")[0]) for line in lines + second.stdout.splitlines()]
    assert ids == every_match("lorem")[: 2 * store_search.PAGE]
    conversation = history.new_conversation("tabs\tand\nnew lines")
    history.add_message(conversation.id, "user", "a\tzebra\non two lines \x1b[31m")
    (line,) = cli(filled, "zebra").stdout.splitlines()
    assert line.split("\t")[2:] == [
        f"conversation {conversation.id}: tabs and new lines",
        "user",
        "a [zebra] on two lines ␛[31m",
    ]
    bad = cli(filled, '"(')
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "error: type a word to search for (letters or digits)"
