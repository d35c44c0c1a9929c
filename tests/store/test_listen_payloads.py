"""Any role can NOTIFY on the channel the apps listen to: a crafted payload is ignored, the listener
keeps its connection, and the changes queued behind it still arrive (issue 34 item 6)."""

from __future__ import annotations

import threading
import time

import pytest

from tui_agent.core.store import location
from tui_agent.core.store.pg_listen import CHANNEL, Change, Listener

pytestmark = pytest.mark.usefixtures("pg_url")

CRAFTED = [
    '{"conversation": 1e999}',
    '{"conversation": -1e999, "kind": "insert"}',
    '{"conversation": NaN}',
    '{"message": 123456789012345678901234567890}',
    '{"conversation": true}',
    '{"conversation": "7"}',
    '{"conversation": 1.5}',
    '{"kind": ["insert"]}',
    '{"status": {"a": 1}}',
    '{"origin": 5}',
    "[1, 2, 3]",
    '"a string"',
    "12",
    "null",
    "not json at all",
    "[" * 3000 + "]" * 3000,
    "",
]


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def notify_all(url: str, payloads: list[str]) -> None:
    import psycopg

    parsed = location.parse(url)
    with psycopg.connect(dbname=parsed.dbname, **parsed.connect_args()) as conn:
        with conn.transaction():  # delivered together: the good ones queue behind the crafted ones
            for payload in payloads:
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))


def test_crafted_payloads_are_ignored_and_nothing_queued_is_lost(pg_url):
    got: list[Change] = []
    failed_once = threading.Event()

    def deliver(change: Change) -> None:
        if change.conversation_id == 1 and not failed_once.is_set():
            failed_once.set()
            raise RuntimeError("a callback that fails once")
        got.append(change)

    listener = Listener(location.parse(pg_url), deliver).start()
    try:
        wait_for(listener.connected.is_set, "the listener never connected")
        good = ['{"conversation": 1, "message": 2, "kind": "insert", "origin": "a"}']
        good += ['{"conversation": 3, "message": 4, "kind": "update", "status": null, "origin": "b"}']
        notify_all(pg_url, [good[0], *CRAFTED, good[1], '{"conversation": 5, "kind": "conversation"}'])
        wait_for(lambda: len(got) >= 2, f"the changes behind the crafted ones were lost: {got}")
        time.sleep(0.5)
        assert [(c.conversation_id, c.message_id, c.kind) for c in got] == [(3, 4, "update"), (5, None, "conversation")]
        assert failed_once.is_set()
        assert listener.connected.is_set()  # the same connection: no "reconnected" was ever delivered
        assert all(c.kind != "reconnected" for c in got)
    finally:
        listener.stop()


@pytest.mark.parametrize("payload", CRAFTED)
def test_each_crafted_payload_parses_to_nothing(payload):
    assert Change.parse(payload) is None
