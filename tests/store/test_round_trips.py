"""Round trips are a budget (issue 35, item 3): what each operation costs the store, counted on
both backends, so that a change cannot add one unseen. Over a link 50 ms away each round trip costs
50 ms (bench/far_store.py measures it through bench/delay_proxy.py).

How it counts:

- PostgreSQL: round trips on the wire. The store is reached through bench/delay_proxy.py with no
  delay: a statement alone is one round trip; statements sent together in a pipeline
  (store/batch.py: one Sync) are one; so are
  ``BEGIN`` ... ``COMMIT`` inside it. The proxy reads the messages the client sends and counts
  those it waits on (a Sync, a simple Query, the start-up...: see its docstring), so a round trip
  is counted whatever the timing. Connecting counts too (libpq's SSL request, then the start-up).
- SQLite: statements (each ``Database.cursor`` peewee opens: a query, ``BEGIN``, ``COMMIT``). A
  SQLite file has no network, but a statement added there is one added on PostgreSQL too, unless
  it was batched.

The ceilings are the issue's budget on PostgreSQL (first paint <= 6 round trips with the connection
and the version check, opening another conversation <= 2, sending a message <= 2 before the request
to the model leaves, `ask` <= 10), and what SQLite sends today: lower a ceiling when a change lowers
the count, never raise one without saying why in the commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv

from tui_agent.core.loop import AgentLoop
from tui_agent.core.store import history, location, pages, worker
from tui_agent.core.store.db import open_store
from tui_agent.core.store.driver import import_peewee
from tui_agent.core.tools.registry import default_registry
from tui_agent.ui.first_read import active_profile, first_read
from tui_agent.ui.widgets.log_release import PAGE

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from delay_proxy import DelayProxy

pytestmark = BOTH_BACKENDS
pw = import_peewee()

# per operation: (SQLite statements, PostgreSQL round trips)
FIRST_PAINT = (6, 5)  # PostgreSQL: connecting and the version check included
OPEN_ANOTHER = (5, 1)
SEND_BEFORE_REQUEST = (8, 2)  # the profile, read once a turn, included
ASK_ROUND_TRIPS = 10  # PostgreSQL: the whole command, from its start to its end


class Meter:
    """What the store was asked so far: round trips (PostgreSQL) or statements (SQLite)."""

    def __init__(self, proxy: DelayProxy | None) -> None:
        self.proxy = proxy
        self.statements = 0

    @property
    def count(self) -> int:
        return self.proxy.round_trips if self.proxy is not None else self.statements


@pytest.fixture
def meter(store_backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Meter]:
    """Before ``env``: the store the test opens is reached through the counting proxy."""
    if store_backend == "postgresql":
        cluster = request.getfixturevalue("pg_cluster")
        url = os.environ["TUI_AGENT_DB"]
        proxy = DelayProxy("127.0.0.1", cluster.port, 0).start()
        monkeypatch.setenv("TUI_AGENT_DB", url.replace(f":{cluster.port}/", f":{proxy.port}/"))
        yield Meter(proxy)
        return
    counted = Meter(None)
    cursor = pw.Database.cursor

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        counted.statements += 1
        return cursor(self, *args, **kwargs)

    monkeypatch.setattr(pw.Database, "cursor", counting)
    yield counted


def sixty_messages(title: str = "sixty", messages: int = 60) -> int:
    conversation = history.new_conversation(title)
    for i in range(messages // 2):
        history.add_message(conversation.id, "user", f"question {i}")
        history.add_message(conversation.id, "assistant", f"answer {i}", status="complete")
    return conversation.id


# A conversation longer than any first read of a fixed size (the context builder read 64 rows with
# the message, then 192 and 144 more, a round trip each, to fill its budget): the budget of round
# trips holds at any length, not only at 60 messages.
LENGTHS = pytest.mark.parametrize("length", [60, 700], ids=["60 messages", "700 messages"])


def budget(pair: tuple[int, int], store_backend: str) -> int:
    return pair[0] if store_backend == "sqlite" else pair[1]


def test_first_paint(meter, env, store_backend):
    sixty_messages()
    before = meter.count
    if store_backend == "postgresql":
        # The app starts: it connects, checks the schema's version (and the models are bound to
        # this new connection; env's stays open, idle, until the end).
        opened = open_store(location.resolve(env.vault.root))
    read = first_read()
    spent = meter.count - before
    assert read.page is not None and len(read.page.rows) == PAGE
    assert read.page.title == "sixty" and read.profile.name == "test"
    assert spent <= budget(FIRST_PAINT, store_backend), spent
    if store_backend == "postgresql":
        opened.close()


def test_opening_another_conversation(meter, env, store_backend):
    other = sixty_messages("other")
    sixty_messages("newest")
    before = meter.count
    page = pages.opened(other, PAGE)
    spent = meter.count - before
    assert page.title == "other" and len(page.rows) == PAGE
    assert [m.content for m in page.rows[-2:]] == ["question 29", "answer 29"]
    assert history.last_conversation().id == other  # remembered: the next start opens it
    assert spent <= budget(OPEN_ANOTHER, store_backend), spent


@LENGTHS
async def test_sending_a_message_before_the_request_leaves(meter, env, store_backend, monkeypatch, length):
    conversation_id = sixty_messages(messages=length)
    from tui_agent.core import llm

    sent: list[int] = []
    stream = llm.LLMClient.stream
    # The first paint read the profile and what its endpoint refused (once a process), on the
    # store's thread (which keeps its connection: the app's was made then).
    await worker.run(active_profile)
    before = meter.count

    def leaving(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(meter.count - before)
        return stream(self, *args, **kwargs)

    monkeypatch.setattr(llm.LLMClient, "stream", leaving)
    profile = await worker.run(active_profile)  # the app reads it once a turn (app.reload_profile)
    loop = AgentLoop(env.vault, profile, default_registry())
    async for _event in loop.run_turn(conversation_id, "one more"):
        pass
    await loop.aclose()
    assert sent and sent[0] <= budget(SEND_BEFORE_REQUEST, store_backend), sent
    # The message was stored before the request left, and the request carried the conversation.
    request = env.fake.requests[-1]
    assert request["messages"][-1]["content"] == "one more"
    # Short messages: the profile's budget (12,000 tokens) takes the whole window (400 at most).
    assert sum(m["role"] == "user" for m in request["messages"]) == min(length, 399) // 2 + 1


@LENGTHS
def test_ask(meter, env, store_backend, length):
    """``tui-agent ask`` in a conversation of 60 (and 700) messages, a process of its own (it connects, checks
    the schema, reads the profile and the conversation, stores the question, the request leaves,
    the reply is stored): every round trip it pays, against the fake model (tests/fake_openai.py)."""
    if store_backend == "sqlite":
        pytest.skip("a budget of round trips on a network: a SQLite file has none (its statements: above)")
    sixty_messages(messages=length)
    before = meter.count
    done = subprocess.run(
        [*tui_agent_argv(), "ask", "--vault", str(env.vault.root), "one more"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    spent = meter.count - before
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), done.stderr  # the fake model's reply
    assert history.recent_messages(history.last_conversation().id, 2)[0].content == "one more"
    assert spent <= ASK_ROUND_TRIPS, spent
    request = env.fake.requests[-1]["messages"]
    assert request[-1]["content"] == "one more" and len(request) == 1 + min(length, 399) + 1


def test_the_request_built_from_the_rows_read_with_the_message_is_the_one_a_fresh_read_builds(env):
    """The send reads the context with the message (turn_rows.add_user_message): the request is the
    same as one built from the store, in a conversation longer than that first read too, and for a
    model whose window leaves the history less than the profile's budget (the read was sized by it)."""
    from tui_agent.core.context import ContextBuilder
    from tui_agent.core.turn_rows import add_user_message

    conversation_id = sixty_messages()
    for i in range(50):
        history.add_message(conversation_id, "user", f"short {i}")
    for budget, window, read_all in ((12_000, None, True), (500, None, False), (12_000, 1_200, True)):
        env.profile.context_budget_tokens = budget
        builder = ContextBuilder(env.vault)
        read = builder.first_read(env.profile)
        user, title, alternatives, recent = add_user_message(conversation_id, f"one more {budget}", [], read)
        assert (title, alternatives) == ("sixty", [])
        assert recent[0][-1].id == user.id
        rows = history.recent_messages(conversation_id, 400)
        assert (len(recent[0]) == len(rows)) == read_all, (budget, len(recent[0]), len(rows))
        builder.prefetched(conversation_id, read, *recent)
        built = builder.build(conversation_id, env.profile, window=window)
        fresh = ContextBuilder(env.vault)
        assert built == fresh.build(conversation_id, env.profile, window=window)
        assert builder.window == fresh.window and builder.window is not None
        assert built[-1]["content"] == f"one more {budget}"
        # Everything fits the profile's budget, or the oldest were left out (and said so).
        assert (len(built) == 1 + len(rows)) == (window is None and read_all) != builder.window.truncated
