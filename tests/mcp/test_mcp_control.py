"""The app's MCP control at the app's end: a start asked for after it (a preload or a trust answer
that finishes while the app closes) starts nothing, so no task is left for the closed loop to drop
("Task was destroyed but it is pending", seen in a loaded run)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

from tui_agent.ui.host import McpHost
from tui_agent.ui.mcp_control import McpControl


async def test_a_start_asked_for_after_the_app_ended_starts_no_task():
    control = McpControl(cast(McpHost, SimpleNamespace()))
    await control.aclose()
    before = asyncio.all_tasks()
    control.start_in_background()
    started = asyncio.all_tasks() - before
    for task in started:  # only on a failure: not left for the loop's end
        task.cancel()
    await asyncio.gather(*started, return_exceptions=True)
    assert not started


async def test_a_start_under_way_is_cancelled_and_awaited_by_the_end():
    gate = asyncio.Event()

    class Waiting(McpControl):
        async def _enabled(self):  # the store read the loaded run's task was waiting on
            await gate.wait()
            return []

    control = Waiting(cast(McpHost, SimpleNamespace()))
    before = asyncio.all_tasks()
    control.start_in_background()
    (task,) = asyncio.all_tasks() - before
    await asyncio.sleep(0)
    await control.aclose()
    assert task.cancelled()
