"""The store as one value (store/backends): the same questions on both backends, answered in the
app's terms; hand-written SQL goes to the server as written (issue 35 item 1)."""

from __future__ import annotations

import asyncio
import threading

import peewee as pw
import pytest
from backends import BOTH_BACKENDS

from tui_agent.core.store import backends, history, location
from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.models import Conversation, Message, Setting
from tui_agent.core.store.searcher import Searcher
from tui_agent.core.tools.sql_run import Request

pytestmark = BOTH_BACKENDS


def test_the_store_is_chosen_once_from_the_url_and_bound(env, store_backend):
    store = backends.current()
    assert store.database is Message._meta.database
    assert backends.of(Message._meta.database) is store  # the same value every time it is asked for
    assert store.name == {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[store_backend]
    url = location.resolve(env.vault.root)
    assert backends.backend_for(url) is type(store)
    assert store.where() == url.where()
    assert store.health() is None


def test_a_question_mark_in_a_literal_or_a_comment_is_sent_as_written(env):
    """The old placeholder translation (portable.py) turned every ``?`` into ``%s`` on PostgreSQL,
    inside quotes and comments too: this statement failed there (IndexError: tuple index out of range)."""
    store = backends.current()
    sql = f"SELECT 'why?' AS q, 'a ?1 b' AS r, {store.param} AS n -- is this ? mangled\n"
    assert tuple(store.execute(sql, (5,)).fetchone()) == ("why?", "a ?1 b", 5)


def test_hand_written_sql_with_repeated_placeholders_pages_a_branch(env):
    """branches.PATH_TEMPLATE uses a value twice (once numbered ?1, ?2 for SQLite, translated for
    psycopg): written with named fields, bound by each store, the page is the same on both."""
    conversation = history.new_conversation()
    ids = [history.add_message(conversation.id, "user", f"m{i}").id for i in range(6)]
    from tui_agent.core.store import branches

    assert [m.id for m in branches.path_messages(conversation.id, limit=3)] == ids[-3:]
    assert [m.id for m in branches.path_messages(conversation.id, limit=3, before_id=ids[3])] == ids[:3]


def test_named_parameters_are_bound_by_each_store_without_reading_the_sql(env):
    """``{name}`` fields become the store's own placeholders (by Python's formatter, not a pattern
    over the SQL); a value used twice is named twice; text in quotes and comments stays as written.
    (A literal ``%`` goes in as a value: psycopg reads ``%`` in SQL sent with parameters.)"""
    store = backends.current()
    sql = "SELECT 'why? :x' AS q, {n} + {n} AS twice, {m} AS m -- is this ? mangled\n"
    assert tuple(store.execute(store.bind(sql), {"n": 20, "m": "x%"}).fetchone()) == ("why? :x", 40, "x%")
    text, params = store.positional("SELECT {a} || {b} || {a} AS abc", {"a": "x", "b": "y"})
    assert params == ["x", "y", "x"] and tuple(store.execute(text, params).fetchone()) == ("xyx",)


def test_upsert_inserts_then_replaces(env):
    store = backends.current()
    store.upsert(Setting, key="store-test", value="one")
    store.upsert(Setting, key="store-test", value="two")
    assert Setting.get(Setting.key == "store-test").value == "two"
    assert Setting.select().where(Setting.key == "store-test").count() == 1


def test_serialize_and_for_update_run_inside_a_transaction(env):
    store = backends.current()
    conversation = history.new_conversation()
    with store.database.atomic():
        store.serialize(0x7475_6999)
        row = store.for_update(Conversation.select().where(Conversation.id == conversation.id)).get()
    assert row.id == conversation.id


def test_a_lock_wait_writes_when_nobody_holds_the_rows(env):
    store = backends.current()
    with store.lock_wait(200):
        Setting.create(key="lock-wait", value="1")
    assert Setting.get(Setting.key == "lock-wait").value == "1"


def test_identity_names_the_store_not_its_content(env, store_backend):
    identity = backends.current().identity()
    assert identity.startswith(f"{store_backend}://")
    assert identity == backends.current().identity()


def test_the_memory_runner_names_its_sql_and_readies_the_request(env):
    store = backends.current()
    runner = store.memory_runner()
    assert runner.dialect == store.name
    assert runner.module.startswith("tui_agent.core.tools.")
    request = Request("", "SELECT 1")
    assert runner.prepare(request) == ""
    assert request.db_path or request.postgres  # where the worker finds the store


def test_search_finds_on_the_apps_connection_and_on_a_reader_of_its_own(env):
    conversation = history.new_conversation()
    found = history.add_message(conversation.id, "user", "a capybara on the lawn").id
    store = backends.current()
    assert [hit.message_id for hit in store.search("capybara", before=None, limit=5).hits] == [found]

    async def run() -> list[int]:
        searcher = Searcher()
        try:
            page = await searcher.page("capybara")
        finally:
            searcher.close()
        return [hit.message_id for hit in page.hits]

    assert asyncio.run(run()) == [found]


def test_a_search_reader_stops_when_told(env):
    history.add_message(history.new_conversation().id, "user", "capybara")
    reader = backends.current().search_reader()
    stopped = threading.Event()
    stopped.set()
    from tui_agent.core.store.search import SearchCancelled

    try:
        with pytest.raises(SearchCancelled):
            reader.page("capybara", None, stopped.is_set)
    finally:
        reader.close()


def test_a_newer_search_stops_the_one_before_even_if_its_cancel_never_comes(env, store_backend, monkeypatch):
    """The palette's next key starts a new search; the cancel of the one before can be lost (on
    Python 3.11 Textual's gather drops it when another provider's hit comes at once). The older
    search stops all the same, and the newer one answers."""
    from tui_agent.core.store import search as store_search
    from tui_agent.core.store import search_pg

    history.add_message(history.new_conversation().id, "user", "lorem ipsum")
    module = search_pg if store_backend == "postgresql" else store_search
    real = module.search_page
    told_to_stop = threading.Event()

    def search_page(conn, query, **kwargs):  # type: ignore[no-untyped-def]
        if query == "lo":
            for _ in range(60_000):  # up to 10 min: until it is told to stop
                if kwargs["cancelled"]():
                    told_to_stop.set()
                    raise store_search.SearchCancelled
                threading.Event().wait(0.01)
        return real(conn, query, **kwargs)

    monkeypatch.setattr(module, "search_page", search_page)

    async def run() -> list[str]:
        searcher = Searcher()
        try:
            older = asyncio.ensure_future(searcher.page("lo"))  # never cancelled
            await asyncio.sleep(0.2)
            newer = await asyncio.wait_for(searcher.page("lorem"), 60)
            with pytest.raises(store_search.SearchCancelled):
                await asyncio.wait_for(older, 60)
        finally:
            searcher.close()
        return [hit.snippet for hit in newer.hits]

    (snippet,) = asyncio.run(run())
    assert "lorem" in snippet.lower()
    assert told_to_stop.is_set()


def test_the_changes_of_others_are_followed_only_where_there_are_others(env, store_backend):
    store = backends.current()
    if store_backend == "sqlite":
        assert store.origin() is None and store.listen(lambda change: None, alive=lambda: True) is None
        assert not store.shared and not store.keeps_pictures
        return
    assert store.origin()
    assert store.shared and store.keeps_pictures
    listener = store.listen(lambda change: None, alive=lambda: True)
    assert listener is not None
    listener.stop()


def test_a_quick_connection_stores_the_cut_reply_as_cancelled(env):
    from helpers import forced_end

    conversation = history.new_conversation()
    row = history.add_message(conversation.id, "assistant", "half a rep", status="streaming")
    assert forced_end([(row.id, "half a reply", None)]) == 1
    assert Message.get_by_id(row.id).status == "cancelled" and Message.get_by_id(row.id).content == "half a reply"


def test_the_store_of_a_database_opened_directly_is_made_once(env):
    database = Message._meta.database
    assert backends.of(database) is backends.current()
    with pytest.raises(StoreError):
        backends.of(pw.Database(None))


def test_migrate_again_changes_nothing_and_an_idle_connection_is_released_where_it_is_counted(env, store_backend):
    store = backends.current()
    before = Setting.select().count()
    store.migrate()  # the schema is the newest already
    assert Setting.select().count() == before
    store.database.connect(reuse_if_open=True)
    store.release_idle()
    assert store.database.is_closed() == (store_backend == "postgresql")  # a server counts connections
    assert store.health() is None  # and the next use connects again
