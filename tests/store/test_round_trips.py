"""Round trips are a budget (issue 35, item 3): the statements each operation sends to the store,
counted on both backends, so that a change cannot add one unseen. Over a link 50 ms away each one
costs 50 ms (bench/far_store.py measures it through bench/delay_proxy.py).

A statement is what goes to the server in one go: a query, an insert, BEGIN, COMMIT (peewee sends
each through ``Database.cursor``). The ceilings are what the code sends today; the issue's goals
(first paint <= 6 round trips with the connection, opening another conversation <= 2, sending a
message <= 2 before the request leaves) are the direction, not yet reached: lower a ceiling when a
change lowers the count, never raise one without saying why in the commit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from backends import BOTH_BACKENDS

from tui_agent.core.loop import AgentLoop
from tui_agent.core.store import history, pages
from tui_agent.core.store.driver import import_peewee
from tui_agent.core.tools.registry import default_registry
from tui_agent.ui.first_read import first_read
from tui_agent.ui.widgets.log_release import PAGE

pytestmark = BOTH_BACKENDS
pw = import_peewee()

# statements, per operation: (SQLite, PostgreSQL)
FIRST_PAINT = (6, 6)
OPEN_ANOTHER = (5, 5)
SEND_BEFORE_REQUEST = (12, 12)


class Counter:
    def __init__(self) -> None:
        self.statements = 0


@contextlib.contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    counter = Counter()
    cursor = pw.Database.cursor

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        counter.statements += 1
        return cursor(self, *args, **kwargs)

    monkeypatch.setattr(pw.Database, "cursor", counted)
    try:
        yield counter
    finally:
        monkeypatch.setattr(pw.Database, "cursor", cursor)


def sixty_messages(title: str = "sixty") -> int:
    conversation = history.new_conversation(title)
    for i in range(30):
        history.add_message(conversation.id, "user", f"question {i}")
        history.add_message(conversation.id, "assistant", f"answer {i}", status="complete")
    return conversation.id


def budget(pair: tuple[int, int], store_backend: str) -> int:
    return pair[0] if store_backend == "sqlite" else pair[1]


def test_first_paint(env, store_backend, monkeypatch):
    sixty_messages()
    with counting(monkeypatch) as counter:
        read = first_read()
    assert read.page is not None and len(read.page.rows) == PAGE
    assert counter.statements <= budget(FIRST_PAINT, store_backend), counter.statements


def test_opening_another_conversation(env, store_backend, monkeypatch):
    other = sixty_messages("other")
    sixty_messages("newest")
    with counting(monkeypatch) as counter:
        page = pages.opened(other, PAGE)
    assert page.title == "other" and len(page.rows) == PAGE
    assert counter.statements <= budget(OPEN_ANOTHER, store_backend), counter.statements


async def test_sending_a_message_before_the_request_leaves(env, store_backend, monkeypatch):
    conversation_id = sixty_messages()
    from tui_agent.core import llm, profiles

    sent: list[int] = []
    stream = llm.LLMClient.stream

    with counting(monkeypatch) as counter:

        def leaving(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            sent.append(counter.statements)
            return stream(self, *args, **kwargs)

        monkeypatch.setattr(llm.LLMClient, "stream", leaving)
        profile = profiles.active_profile()  # the app reads it once a turn
        loop = AgentLoop(env.vault, profile, default_registry())
        async for _event in loop.run_turn(conversation_id, "one more"):
            pass
        await loop.aclose()
    assert sent and sent[0] <= budget(SEND_BEFORE_REQUEST, store_backend), sent
