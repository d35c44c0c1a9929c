"""Nothing on the UI thread waits for the database (issue 35, item 2): tests/store_thread_guard.py
fails every test in which the app makes a store call on the event loop's thread. Here: the guard
itself sees such a call (and not a call from the store's thread), on both backends."""

from __future__ import annotations

from backends import BOTH_BACKENDS
from store_on_loop_app import ReadsOnTheLoop, ReadsOnTheStoreThread
from store_thread_guard import GUARD
from textual.app import App

from tui_agent.core.store.models import Setting

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


def test_the_guard_sees_it_in_an_app_a_test_runs_in_its_own_thread(env):
    """``snap_compare`` runs the app in the test's own thread: the test's frames, below the event
    loop's, do not make the app's call a test's."""

    async def leave(pilot) -> None:
        await pilot.pause()
        pilot.app.exit()

    ReadsOnTheLoop().run(headless=True, size=(40, 10), auto_pilot=leave)
    seen, GUARD.calls[:] = list(GUARD.calls), []
    assert len(seen) == 1 and "store_on_loop_app.py" in seen[0]


def test_a_tests_own_code_run_by_the_pilot_is_not_the_apps(env):
    """What a test's ``run_before`` does through the pilot (set up, check) is the test's."""

    async def reads(pilot) -> None:
        Setting.select().count()
        pilot.app.exit()

    App().run(headless=True, size=(40, 10), auto_pilot=reads)
    assert GUARD.calls == []
