"""A long history written fast: ``messages`` messages in conversations of ``per_conversation``,
straight into a migrated agent.db in one transaction (executemany; the full-text index built once
at the end, as the insert trigger would have, then the trigger put back). Used by the search tests
(20,000 messages, well under a second) and by bench/ (1,000,000 messages, cached)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2023, 1, 1, tzinfo=UTC)
STEP = timedelta(minutes=1)
# Words with a known number of matches: ``lorem`` is in every message, ``quasar`` in one in 1,000,
# ``kumquat`` in one in 100,000; ``ipsum lorem`` (as a phrase) in none, though both words are in all.
QUASAR_EVERY = 1_000
KUMQUAT_EVERY = 100_000


def text(i: int) -> str:
    """Message ``i``'s content (0-based): the bench's Markdown line, with rarer words mixed in."""
    extra = ""
    if i % QUASAR_EVERY == QUASAR_EVERY - 1:
        extra += " quasar"
    if i % KUMQUAT_EVERY == KUMQUAT_EVERY - 1:
        extra += " kumquat"
    return f"message {i}: **lorem** ipsum `dolor` sit amet,{extra} " + "consectetur adipiscing elit " * 6


def stamp(i: int) -> str:
    return (START + i * STEP).strftime("%Y-%m-%d %H:%M:%S.%f")


def fill_history(db_path: Path, messages: int, per_conversation: int = 250, largest: int = 0) -> None:
    """Append ``messages`` messages in new conversations (titled ``topic N``) to a migrated database;
    ``largest``: the first of them holds that many messages (the rest ``per_conversation`` each)."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        trigger = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_insert'").fetchone()[0]
        conn.execute("DROP TRIGGER messages_fts_insert")
        first_conversation = conn.execute("SELECT coalesce(max(id), 0) FROM conversations").fetchone()[0] + 1
        first_message = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0] + 1
        starts = [0, *range(largest or per_conversation, messages, per_conversation)]
        ends = [*starts[1:], messages]
        conn.executemany(
            "INSERT INTO conversations(id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (
                (first_conversation + c, f"topic {first_conversation + c}", stamp(start), stamp(end - 1))
                for c, (start, end) in enumerate(zip(starts, ends, strict=True))
            ),
        )

        def rows() -> Iterator[tuple[int, int, str, str, str]]:
            for c, (start, end) in enumerate(zip(starts, ends, strict=True)):
                for i in range(start, end):
                    role = "user" if i % 2 == 0 else "assistant"
                    yield first_message + i, first_conversation + c, role, text(i), stamp(i)

        conn.executemany(
            "INSERT INTO messages(id, conversation_id, role, content, created_at) VALUES (?, ?, ?, ?, ?)", rows()
        )
        if first_message == 1:
            conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
        else:
            conn.execute(
                "INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages WHERE id >= ?",
                (first_message,),
            )
        conn.execute(trigger)
        conn.execute("COMMIT")
    finally:
        conn.close()


def fill_store(messages: int, per_conversation: int = 250, largest: int = 0) -> None:
    """``fill_history`` into the store the models are bound to, SQLite or PostgreSQL."""
    from tui_agent.core.store.models import Message

    db = Message._meta.database
    store_url = getattr(db, "store_url", None)
    if store_url is not None and store_url.is_postgresql:
        fill_history_pg(store_url, messages, per_conversation, largest)
    else:
        fill_history(Path(db.database), messages, per_conversation, largest)


def fill_history_pg(url: Any, messages: int, per_conversation: int = 250, largest: int = 0) -> None:
    """``fill_history`` for a migrated PostgreSQL store (``url``: a StoreURL or a URL libpq takes):
    the same rows, written with COPY in one transaction; with many messages the search index is
    dropped first and built once at the end (as one CREATE INDEX: faster than growing it row by row)."""
    import psycopg

    def connect() -> psycopg.Connection[Any]:
        if isinstance(url, str):
            return psycopg.connect(url, autocommit=True)
        return psycopg.connect(dbname=url.dbname, autocommit=True, **url.connect_args())

    with connect() as conn, conn.transaction(), conn.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM conversations")
        first_conversation = int(cursor.fetchone()[0]) + 1  # type: ignore[index]
        cursor.execute("SELECT coalesce(max(id), 0), count(*) FROM messages")
        last_message, existing = cursor.fetchone()  # type: ignore[misc]
        first_message = int(last_message) + 1
        rebuild = messages > 10 * (existing + 1_000)
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'messages_search'"
        )
        index = cursor.fetchone()[0]  # type: ignore[index]
        if rebuild:
            cursor.execute("DROP INDEX messages_search")
        starts = [0, *range(largest or per_conversation, messages, per_conversation)]
        ends = [*starts[1:], messages]
        with cursor.copy("COPY conversations (id, title, created_at, updated_at) FROM STDIN") as copy:
            for c, (start, end) in enumerate(zip(starts, ends, strict=True)):
                copy.write_row(
                    (first_conversation + c, f"topic {first_conversation + c}", stamp(start), stamp(end - 1))
                )
        with cursor.copy("COPY messages (id, conversation_id, role, content, created_at) FROM STDIN") as copy:
            for c, (start, end) in enumerate(zip(starts, ends, strict=True)):
                for i in range(start, end):
                    role = "user" if i % 2 == 0 else "assistant"
                    copy.write_row((first_message + i, first_conversation + c, role, text(i), stamp(i)))
        for table in ("conversations", "messages"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        if rebuild:
            cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
            cursor.execute(index)
    with connect() as conn:
        conn.execute("VACUUM ANALYZE messages")
        conn.execute("ANALYZE conversations")
