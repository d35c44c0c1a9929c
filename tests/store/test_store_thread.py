"""Nothing on the UI thread waits for the database (issue 35, item 2): tests/store_thread_guard.py
fails every test in which the app makes a store call on the event loop's thread. Here: the guard
itself sees such a call (and not a call from the store's thread), on both backends."""

from __future__ import annotations

from backends import BOTH_BACKENDS
from store_on_loop_app import ReadsOnTheLoop, ReadsOnTheStoreThread
from store_thread_guard import GUARD

pytestmark = BOTH_BACKENDS


async def test_the_guard_sees_a_store_call_on_the_event_loop_thread(env):
    async with ReadsOnTheLoop().run_test() as pilot:
        await pilot.pause()
    seen, GUARD.calls[:] = list(GUARD.calls), []  # (else this test fails, as it should anywhere else)
    assert len(seen) == 1 and "on the event loop's thread" in seen[0] and "store_on_loop_app.py" in seen[0]


async def test_a_call_on_the_store_thread_is_not_one(env):
    async with ReadsOnTheStoreThread().run_test() as pilot:
        await pilot.pause()
    assert GUARD.calls == []
