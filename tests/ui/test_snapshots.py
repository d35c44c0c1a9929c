"""Snapshot tests (SVGs in snapshots/). Plain `def` tests: snap_compare runs its own event loop.

Deterministic: fixed 120x40 terminal, frozen clock, no animation, HalfcellImage.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fake_openai import Reply, png_bytes
from media_helpers import picture_tool_row
from pilot_helpers import make, screen_text, steady_screen, until

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.ui.turn_view import TurnView

SIZE = (120, 40)
MARKDOWN_REPLY = """## Reversing a list

Use **slicing** or `reversed()`:

```python
items = [1, 2, 3]
print(items[::-1])
```

- slicing makes a copy
- `reversed()` is lazy
"""


async def wait_idle(pilot, app=None) -> None:
    app = app or pilot.app
    await until(pilot, lambda: not app.turns)
    await steady_screen(app, pilot)


def sent(text: str) -> Callable[[Any], Awaitable[None]]:
    """A snapshot's ``run_before``: ``text`` typed and sent, then the screen once the turn is over."""

    async def run_before(pilot: Any) -> None:
        pilot.app.conversation_view.composer.load_text(text)
        await pilot.press("enter")
        await wait_idle(pilot)

    return run_before


def tool_conversation(env, images: int = 0) -> int:
    conversation = history.new_conversation("tools")
    history.add_message(conversation.id, "user", "make pictures" if images else "count my messages")
    if images:
        paths = []
        for i in range(images):
            path = env.vault.media / f"shapes/shape-{i + 1}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png_bytes(((60 * i + 40) % 255, 120, 200 - 50 * i), (32, 20)))
            paths.append(f"media/shapes/shape-{i + 1}.png")
        picture_tool_row(conversation.id, paths, model="flux2-test")
    else:
        arguments = json.dumps({"query": "SELECT count(*) AS n FROM messages"})
        output = json.dumps(
            {"status": "ok", "data": {"kind": "select", "columns": ["n"], "rows": [[42]], "row_count": 1}}
        )
        history.add_message(
            conversation.id, "memory_tool", output, tool_name="memory_sql", tool_call_id="c1", tool_arguments=arguments
        )
    history.add_message(conversation.id, "assistant", "Here you go.")
    return conversation.id


def test_empty_first_run(env, snap_compare):
    """You should see an empty chat with the welcome line and a setup card saying what to set
    (OPENAI_API_KEY, ollama serve and a pull of the profile's qwen3, or the sidebar), and the
    composer focused."""
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")
    profiles.set_field(env.profile, "chat_model", "qwen3")

    async def run_before(pilot):
        await until(pilot, lambda: pilot.app.conversation_view.chat_log.query(".setup-card"))
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env, check_endpoint=True), terminal_size=SIZE, run_before=run_before)


def test_streamed_markdown_reply(env, snap_compare):
    """You should see the user's question and a Markdown reply with a heading, bold text,
    a highlighted Python code block and a bullet list; the status line shows tokens."""
    env.fake.script(Reply(text=MARKDOWN_REPLY, chunk_size=3))

    assert snap_compare(make(env), terminal_size=SIZE, run_before=sent("How do I reverse a list?"))


def test_tool_block_collapsed(env, snap_compare):
    """You should see one collapsed block titled 'Tool result · memory_sql · ✓ ok'."""
    tool_conversation(env)
    assert snap_compare(make(env), terminal_size=SIZE)


def test_tool_block_expanded(env, snap_compare):
    """You should see the memory_sql block expanded: the command with its SQL and the raw JSON output."""
    tool_conversation(env)

    async def run_before(pilot):  # the key once the block is drawn, then until it is open
        await until(pilot, lambda: "Here you go." in screen_text(pilot.app))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "SELECT count(*)" in screen_text(pilot.app))
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_carousel_one_image(env, snap_compare):
    """You should see one image in colour half-blocks with no arrows and no counter."""
    tool_conversation(env, images=1)
    assert snap_compare(make(env), terminal_size=SIZE)


def test_carousel_three_images_after_right(env, snap_compare):
    """You should see the second of three images, arrows on both sides and the counter '2 / 3'."""
    tool_conversation(env, images=3)

    async def run_before(pilot):
        await pilot.pause()
        carousel = pilot.app.conversation_view.chat_log.query_one("ImageCarousel")
        carousel.focus()
        await pilot.press("right")
        await until(
            pilot,
            lambda: (
                str(carousel.query_one(".counter").render()) == "2 / 3" and len(carousel.query(".carousel-image")) == 1
            ),
        )
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_generating_placeholder(env, snap_compare):
    """You should see the user's /imagine message and a placeholder with a spinner,
    'running generate_image ...' and the elapsed seconds."""

    async def run_before(pilot):
        app = pilot.app
        view = TurnView(app.conversation_view, None)
        conversation = history.new_conversation("generating")
        await app.conversation_view.open_conversation(conversation.id)
        view.conversation_id = conversation.id
        user = history.add_message(conversation.id, "user", "/imagine a lighthouse at night")
        await view.handle(
            ev.TurnStarted(conversation.id, user.id, ev.StoredMessage(user.id, user.content), conversation.title)
        )
        await view.handle(
            ev.ToolStarted("c1", "generate_image", "{}", "generate_image imagine/lighthouse.png: a lighthouse at night")
        )
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_error_card(env, snap_compare):
    """You should see the user's message and a red error card: can't reach the model, with the URL and what to do."""
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")

    assert snap_compare(make(env), terminal_size=SIZE, run_before=sent("hello?"))


def test_sidebar_validation_error(env, snap_compare):
    """You should see the sidebar with the temperature field marked invalid and the message
    'temperature: must be between 0 and 2, got 7.0' under it."""
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")

    async def run_before(pilot):
        await pilot.press("ctrl+b")
        await pilot.pause()
        field = pilot.app.query_one("#field-temperature")
        field.value = "7"
        field.focus()
        await pilot.press("enter")
        pilot.app.query_one("#profile-editor").scroll_to_widget(field, animate=False)
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_approval_modal(env, snap_compare):
    """You should see a modal asking to allow memory_sql to change the history: how many messages
    it changes, old -> new for message 1 (no SQL text), and Yes / No / Always buttons, No focused."""
    env.fake.script(
        Reply(tool_calls=[("memory_sql", json.dumps({"query": "UPDATE messages SET content = 'Paris' WHERE id = 1"}))]),
        Reply(text="Done."),
    )

    async def run_before(pilot):
        pilot.app.conversation_view.composer.load_text("correct my first message to Paris")
        await pilot.press("enter")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "ApprovalScreen" and pilot.app.screen.armed)
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_user_bubble_with_text_and_image(env, snap_compare):
    """You should see ONE user bubble holding the text above the attached image."""
    conversation = history.new_conversation("attach")
    (env.vault.uploads / "photo.png").write_bytes(png_bytes((30, 160, 90), (24, 16)))
    history.add_message(conversation.id, "user", "What is in this picture?", attachments=["media/uploads/photo.png"])
    assert snap_compare(make(env), terminal_size=SIZE)


def test_conversation_list(env, snap_compare):
    """You should see the sidebar listing three conversations, the current one highlighted, with New/Rename/Delete."""
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")
    for title in ("Trip to Lisbon", "Python questions", "Birthday ideas"):
        conversation = history.new_conversation(title)
        history.add_message(conversation.id, "user", f"about {title}")

    async def run_before(pilot):
        await pilot.press("ctrl+b")
        await steady_screen(pilot.app, pilot)

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)
