"""Snapshots of what issue 11 and 10.2 made visible: tool error cards, the capped-count warning,
the status line's states, HTML kept as text, escape sequences shown, not run.

Deterministic like tests/ui/test_snapshots.py: 120x40, frozen clock, no animation, HalfcellImage.
"""

from __future__ import annotations

import json

from fake_openai import png_bytes
from pilot_helpers import make, steady_screen

from tui_agent.core import events as ev
from tui_agent.core.store import history
from tui_agent.ui.turn_view import TurnView

SIZE = (120, 40)


def image_tool_conversation(env, output: dict, images: int = 0) -> None:
    conversation = history.new_conversation("images")
    history.add_message(conversation.id, "user", "/imagine ten red foxes in the snow")
    paths = []
    for i in range(images):
        path = env.vault.media / f"foxes/fox-{i + 1}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes(((70 * i + 120) % 255, 60, 40), (32, 20)))
        paths.append(f"media/foxes/fox-{i + 1}.png")
    history.add_message(
        conversation.id,
        "image_tool",
        json.dumps(output),
        attachments=paths,
        tool_name="generate_image",
        tool_call_id="c1",
        tool_arguments=json.dumps({"prompt": "red foxes in the snow", "path": "foxes/fox.png", "count": 10}),
        status="complete" if output["status"] == "ok" else "error",
    )


def test_failed_tool_error_card(env, snap_compare):
    """You should see the /imagine message, then a red card '✗ generate_image failed' with flux2's own
    words and what to do, above a collapsed red block titled with the one-line reason."""
    image_tool_conversation(env, {"status": "error", "error": "flux2 failed: model exploded: out of memory"})
    assert snap_compare(make(env), terminal_size=SIZE)


def test_capped_count_warning(env, snap_compare):
    """You should see the carousel (1 / 4) with '⚠ count 10 capped at 4' right under it, and the
    block title ending in '✓ ok · ⚠ count 10 capped at 4'."""
    paths = [f"media/foxes/fox-{i}.png" for i in range(1, 5)]
    data = {"paths": paths, "prompt": "foxes", "model": "flux2", "count": 4, "warning": "count 10 capped at 4"}
    image_tool_conversation(env, {"status": "ok", "data": data}, images=4)
    assert snap_compare(make(env), terminal_size=SIZE)


def status_snapshot(env, snap_compare, events) -> None:
    async def run_before(pilot):
        app = pilot.app
        conversation = history.new_conversation("status")
        await app.conversation_view.open_conversation(conversation.id)
        user = history.add_message(conversation.id, "user", "Tell me about foxes")
        view = TurnView(app.conversation_view, conversation.id)
        await view.handle(
            ev.TurnStarted(conversation.id, user.id, ev.StoredMessage(user.id, user.content), conversation.title)
        )
        for event in events:
            await view.handle(event)
        await view.flush()
        await steady_screen(app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_status_waiting_for_first_token(env, snap_compare):
    """You should see a thinking spinner and the status line 'chat-model · waiting for the first token · 0.0s'."""
    status_snapshot(env, snap_compare, [ev.AssistantStarted("chat-model")])


def test_status_streaming(env, snap_compare):
    """You should see the reply so far and the status line 'chat-model · streaming · 3 tokens'."""
    deltas = [ev.TextDelta(t) for t in ("Foxes are ", "small omnivores ", "of the dog family.")]
    status_snapshot(env, snap_compare, [ev.AssistantStarted("chat-model"), *deltas])


def test_status_running_a_tool(env, snap_compare):
    """You should see the tool placeholder and the status line 'running web_search… · 0.0s'."""
    status_snapshot(env, snap_compare, [ev.ToolStarted("c1", "web_search", "{}", "web_search foxes")])


def test_html_and_escapes_shown_as_text(env, snap_compare):
    """You should see '<div>' and '<b>bold</b>' as text, a line starting with '<think>', and the
    escape sequences as ␛]0;PWNED␇ and ␛[2J: the screen is not cleared, nothing is hidden."""
    conversation = history.new_conversation("html")
    history.add_message(conversation.id, "user", "how do I make text bold?")
    history.add_message(
        conversation.id,
        "assistant",
        "<think>short</think>Wrap it in a <div> element and use <b>bold</b>.\n\n"
        "Title: \x1b]0;PWNED\x07 clear: \x1b[2J end.",
    )
    assert snap_compare(make(env), terminal_size=SIZE)
