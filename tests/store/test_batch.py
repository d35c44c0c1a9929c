"""Statements sent together (store/batch.py): in order, each one's rows, one transaction when
asked; a failure is peewee's error (what callers catch) and leaves nothing half-written."""

from __future__ import annotations

import pytest
from backends import BOTH_BACKENDS

from tui_agent.core.store import batch, history
from tui_agent.core.store.driver import import_peewee
from tui_agent.core.store.errors import DATABASE_ERRORS
from tui_agent.core.store.models import Conversation, Message

pytestmark = BOTH_BACKENDS
pw = import_peewee()


def test_each_statement_returns_its_rows_in_order(env):
    conversation = history.new_conversation("first")
    history.add_message(conversation.id, "user", "hello 100% ready")
    db = Message._meta.database
    titles, contents, nothing = batch.together(
        db,
        [
            ("SELECT title FROM conversations WHERE id = {id}", {"id": conversation.id}),
            (
                "SELECT content FROM messages WHERE conversation_id = {id} AND content LIKE {like}",
                {"id": conversation.id, "like": "%100%"},
            ),
            ("UPDATE conversations SET title = {title} WHERE id = {id}", {"title": "renamed", "id": conversation.id}),
        ],
    )
    assert titles.rows == [("first",)] and titles.columns == ["title"]
    assert contents.rows == [("hello 100% ready",)]
    assert nothing.rows == []
    assert Conversation.get_by_id(conversation.id).title == "renamed"


def test_an_atomic_batch_that_fails_writes_nothing(env):
    conversation = history.new_conversation("kept")
    db = Message._meta.database
    with pytest.raises(pw.IntegrityError):  # peewee's class, as its own cursor raises it
        batch.together(
            db,
            [
                ("UPDATE conversations SET title = {title} WHERE id = {id}", {"title": "lost", "id": conversation.id}),
                (
                    "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ({id}, '', '', '')",
                    {"id": conversation.id},
                ),
            ],
            atomic=True,
        )
    assert issubclass(pw.IntegrityError, DATABASE_ERRORS)
    assert Conversation.get_by_id(conversation.id).title == "kept"
    # The connection is usable afterwards (the failed transaction was rolled back).
    assert batch.together(db, [("SELECT count(*) FROM conversations", [])])[0].rows == [(1,)]


def test_rows_become_models_with_their_fields_values(env):
    conversation = history.new_conversation("models")
    message = history.add_message(conversation.id, "user", "hi", attachments=["media/a.png"])
    (result,) = batch.together(Message._meta.database, [("SELECT * FROM messages WHERE id = {id}", {"id": message.id})])
    (row,) = result.models(Message)
    assert (row.id, row.conversation_id, row.content, row.parent_id) == (message.id, conversation.id, "hi", 0)
    assert history.attachments_for([message.id]) == {message.id: ["media/a.png"]}
    assert Conversation.get_by_id(conversation.id).leaf_id == message.id
