"""Snapshots of the message cursor, the alternatives carousel and the branch marker (SVGs in
snapshots/test_snapshots_conversation/). Plain `def` tests: snap_compare runs its own loop."""

from __future__ import annotations

from pilot_helpers import make, screen_text, steady_screen, until

from tui_agent.core.store import branches, history

SIZE = (100, 30)


def after(*keys: str, shown_before: tuple[str, ...], shown_after: tuple[str, ...]):
    """``run_before``: the keys once the conversation is on screen, then until what they bring is
    drawn and the screen holds still (pressed at once, a loaded machine took the snapshot before)."""

    async def run_before(pilot) -> None:
        await until(pilot, lambda: all(text in screen_text(pilot.app) for text in shown_before))
        await pilot.press(*keys)
        # The keys' text, and the message cursor on its message: a message shown again (another
        # alternative) is drawn before the cursor is put back on it, after a read of the store that
        # can outlast steady_screen's pause (CI: a snapshot without the cursor's colour).
        await until(pilot, lambda: all(text in screen_text(pilot.app) for text in shown_after) and cursor_on(pilot.app))
        await steady_screen(pilot.app, pilot)

    return run_before


def cursor_on(app) -> bool:
    cursor = app.query_one("#chat-log").cursor
    return cursor is not None and cursor.is_attached and cursor.has_class("-cursor")


def regenerated(env) -> None:
    """'Name a colour' answered twice: the second answer is on screen, the first kept."""
    conversation = history.new_conversation("colours")
    history.add_message(conversation.id, "user", "Name a colour.")
    first = history.add_message(conversation.id, "assistant", "**Blue**, like the sky.")
    branches.rewind_to_parent_of(first.id)
    history.add_message(conversation.id, "assistant", "**Green**, like grass.")


def edited(env) -> None:
    """Two user turns; the second edited and resent: the new branch is on screen."""
    conversation = history.new_conversation("fruit")
    history.add_message(conversation.id, "user", "Pick a fruit.")
    history.add_message(conversation.id, "assistant", "An apple.")
    second = history.add_message(conversation.id, "user", "Now a vegetable.")
    history.add_message(conversation.id, "assistant", "A carrot.")
    branches.rewind_to_parent_of(second.id)
    history.add_message(conversation.id, "user", "Now a nut.")
    history.add_message(conversation.id, "assistant", "A walnut.")


def test_message_cursor_on_a_user_message(env, snap_compare):
    """You should see the chat with the cursor (accent bar and tint) on the user's 'Pick a fruit.'
    bubble, and the footer showing the cursor's keys (Actions, Copy, To prompt, ...)."""
    conversation = history.new_conversation("fruit")
    history.add_message(conversation.id, "user", "Pick a fruit.")
    history.add_message(conversation.id, "assistant", "An apple.")
    run_before = after("up", "up", shown_before=("An apple.",), shown_after=("Actions",))
    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_alternatives_carousel(env, snap_compare):
    """You should see 'Name a colour.' and the reply '**Green**, like grass.' with '◀ 2 / 2 ▶'
    above it."""
    regenerated(env)
    assert snap_compare(make(env), terminal_size=SIZE)


def test_alternatives_carousel_after_left(env, snap_compare):
    """You should see the first answer 'Blue, like the sky.' with '◀ 1 / 2 ▶' above it."""
    regenerated(env)
    run_before = after("up", "left", shown_before=("Green",), shown_after=("Blue", "1 / 2"))
    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_branch_marker(env, snap_compare):
    """You should see 'Pick a fruit.', 'An apple.', then 'branch ◀ 2 / 2 ▶' above 'Now a nut.' and
    'A walnut.'."""
    edited(env)
    assert snap_compare(make(env), terminal_size=SIZE)


def themed_conversation(env) -> None:
    import json

    regenerated(env)
    conversation = history.list_conversations()[0]
    history.add_message(conversation.id, "user", "Count my messages, then show code.")
    arguments = json.dumps({"query": "SELECT count(*) AS n FROM messages"})
    output = json.dumps({"status": "ok", "data": {"kind": "select", "columns": ["n"], "rows": [[4]], "row_count": 1}})
    history.add_message(
        conversation.id, "memory_tool", output, tool_name="memory_sql", tool_call_id="c1", tool_arguments=arguments
    )
    history.add_message(conversation.id, "assistant", "You sent **4** messages:\n\n```python\nprint(4)\n```")
    history.add_message(conversation.id, "error", "Can't reach the model\nStart the server.", status="error")


def test_light_theme(env, snap_compare):
    """Light theme: user bubbles, the alternatives bar, a Markdown reply with code, a tool block
    and a red error card, all readable on a light background; the cursor on the error card."""
    from tui_agent.ui.themes import save_theme

    themed_conversation(env)
    save_theme("textual-light")
    run_before = after("up", shown_before=("Start the server.",), shown_after=("Actions",))
    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_dark_theme(env, snap_compare):
    """The same conversation in the default dark theme."""
    themed_conversation(env)
    run_before = after("up", shown_before=("Start the server.",), shown_after=("Actions",))
    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)
