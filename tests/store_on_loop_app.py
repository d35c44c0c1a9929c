"""An app that reads the store on the event loop's thread, as the app must never do: the guard
(tests/store_thread_guard.py) must see it (tests/test_store_thread.py)."""

from __future__ import annotations

from textual.app import App

from tui_agent.core.store import worker
from tui_agent.core.store.models import Setting


class ReadsOnTheLoop(App[None]):
    def on_mount(self) -> None:
        Setting.select().count()


class ReadsOnTheStoreThread(App[None]):
    async def on_mount(self) -> None:
        await worker.run(lambda: Setting.select().count())
