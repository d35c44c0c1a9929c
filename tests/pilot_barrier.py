"""``Pilot.pause()`` waits for the message pumps that have work, not for every widget (a plugin
of the test run, loaded by tests/conftest.py; the product is not touched).

Textual's ``Pilot.pause()`` first waits until the app, the screen and each widget on it have
handled what was queued to them when the pause began (``Pilot._wait_for_screen``): it posts a
callback to every one of them and waits for all. A widget whose task is waiting for its next
message, with none queued, runs that callback at once: it adds nothing to what the pause waits
for, and each costs two messages (the callback and the idle event after it). With a long reply
on screen that is thousands of messages per pause, and the streaming tests pause twice per write:
a third of test_stream_cost's CPU (8 of 22 s), 8 % of tests/ui and tests/performance together.

Here the callback goes to the app, the screen (their idle handlers run the screen's update and
its after-refresh callbacks, as Textual's pause does) and every widget that is not waiting: one
with a message queued or in hand, one handling an idle event, one whose task has not started.
What a pause waits for is unchanged. tests/ui/test_pilot_barrier.py proves the private names this
reads (``Pilot._wait_for_screen``, ``MessagePump._message_queue``, Textual's queue's ``ready_event``
and asyncio's ``Event._waiters``)
and that a pause still waits for a handler in progress.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest


def waiting(pump: Any) -> bool:
    """The pump's task is blocked waiting for its next message, and none is queued: a callback
    posted to it would run at once."""
    queue = vars(pump).get("_message_queue")  # a cached property: absent until a message was posted
    if queue is None or not queue.empty():
        return False
    # Textual's queue: an empty one's ``get`` waits on its ``ready_event`` (an asyncio.Event).
    return any(not waiter.done() for waiter in queue.ready_event._waiters)


async def wait_for_busy_pumps(pilot: Any, timeout: float = 30.0) -> bool:
    """``Pilot._wait_for_screen`` for the pumps that have work: True once each has handled what
    was queued to it when this began; False if the app raised meanwhile."""
    from textual.pilot import WaitForScreenTimeout

    app = pilot.app
    try:
        screen = app.screen
    except Exception:
        return False
    pumps = [app, screen, *(widget for widget in screen.walk_children() if not waiting(widget))]
    left = 0
    all_done = asyncio.Event()

    def one_done() -> None:
        nonlocal left
        left -= 1
        if left == 0:
            all_done.set()

    for pump in pumps:
        if pump.call_later(one_done):
            left += 1
    if not left:
        return True
    waits = [asyncio.create_task(all_done.wait()), asyncio.create_task(app._exception_event.wait())]
    _, pending = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    if len(pending) == len(waits):
        raise WaitForScreenTimeout("Timed out while waiting for widgets to process pending messages.")
    return left == 0


@pytest.fixture(autouse=True, scope="session")
def pilot_waits_for_busy_pumps() -> Iterator[None]:
    from textual.pilot import Pilot

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Pilot, "_wait_for_screen", wait_for_busy_pumps)
        yield
