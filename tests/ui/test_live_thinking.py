"""A reply arriving live from another machine shows its Thinking block at once, as reopening the
conversation shows it (issue 37 item 4): machine A (another vault folder on the same PostgreSQL
database) asks a reasoning model (a DeepSeek-shaped stream replayed over loopback); B has the
conversation open."""

from __future__ import annotations

import subprocess

import pytest
from cli_fork import tui_agent_argv
from sse_replay import ReplayServer, held
from test_live import ON_POSTGRESQL, make, other_machine, statuses, texts, until

from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.thinking import ThinkingBlock

REASONING = "9.11 vs 9.8: compare tenths, 1 < 8."
ANSWER = "9.8 is greater."


@pytest.mark.slow
@ON_POSTGRESQL
async def test_a_reply_from_another_machine_shows_its_thinking_without_reopening(env, tmp_path):
    replay = ReplayServer().start()
    try:
        profiles.create_profile(
            "reasoning",
            {
                "base_url": replay.base_url,
                "api_key_env": "",
                "chat_model": "deepseek-reasoner",
                "vision_model": "v",
                "image_model": "i",
                # machine A reads nothing while the reply is held (until B shows it): no timeout is tested
                "request_timeout_s": 600,
            },
        )
        conversation = history.new_conversation("shared")
        history.add_message(conversation.id, "user", "before")
        history.add_message(conversation.id, "assistant", "earlier answer")
        replay.script(held("deepseek_reasoning_content.sse", 4))  # thought, and began to answer
        app = make(env.vault)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.live_updates is not None and app.live_updates.listener.connected.is_set())
            argv = [*tui_agent_argv(), "ask", "--vault", str(other_machine(tmp_path))]
            machine_a = subprocess.Popen(
                [*argv, "--profile", "reasoning", "--conversation", str(conversation.id), "which is greater?"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            # B shows A's reply running, then A's model finishes it.
            await until(pilot, lambda: "streaming" in statuses(app))
            replay.release()
            _, errors = machine_a.communicate(timeout=120)
            assert machine_a.returncode == 0, errors
            await until(pilot, lambda: ANSWER in texts(app, AssistantBubble))
            await until(pilot, lambda: bool(app.query_one("#chat-log").query(ThinkingBlock)))
            (block,) = app.query_one("#chat-log").query(ThinkingBlock)
            assert block.text == REASONING
            assert block.parent is not None and block.display
    finally:
        replay.release()
        replay.stop()
