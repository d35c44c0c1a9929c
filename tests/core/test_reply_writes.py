"""The reply's row is written on the store's thread in the background: a store far away, or one
that stopped answering, never holds up the words on screen. The writes still reach the row in
order, and the finished row holds the whole reply."""

from __future__ import annotations

import asyncio
import threading

from fake_openai import Reply
from helpers import make_loop, rows

from tui_agent.core import events as ev
from tui_agent.core.reply import FLUSH_INTERVAL_S
from tui_agent.core.store import worker

PIECES = 40
PACE_S = 0.03  # the reply takes 1.2 s: more than two flush intervals


async def test_a_store_that_does_not_answer_does_not_hold_up_the_words(env):
    assert PIECES * PACE_S > 2 * FLUSH_INTERVAL_S
    env.fake.script(Reply(tokens=[f" w{i}" for i in range(PIECES)], chunk_delay_s=PACE_S))
    release, held_to_the_end = threading.Event(), threading.Event()

    def hold_the_store() -> None:  # the store's one thread is busy (a slow link, a server gone)
        release.wait(20)
        held_to_the_end.set()

    loop = make_loop(env)
    holding: asyncio.Future[None] | None = None
    try:
        shown: list[str] = []
        async for event in loop.run_turn(None, "hi"):
            if isinstance(event, ev.TextDelta):
                shown.append(event.text)
                if holding is None:  # from the first words on, the store's thread is taken
                    holding = asyncio.ensure_future(worker.run(hold_the_store))
                if len(shown) == PIECES:
                    # Every word came while the store was held: the flushes due meanwhile waited.
                    assert not held_to_the_end.is_set()
                    release.set()
        assert "".join(shown) == "".join(f" w{i}" for i in range(PIECES))
    finally:
        release.set()
        await loop.aclose()
    assert holding is not None
    await holding
    (assistant,) = [r for r in rows(env.vault.db_path) if r[1] == "assistant"]
    assert assistant[2] == "".join(shown) and assistant[3] == "complete"
