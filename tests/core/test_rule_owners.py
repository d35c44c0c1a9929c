"""One owner in core/ for each rule of what the user types: the message-length limit and slash
parsing (with /help and /new) are core's; the TUI's composer asks core, as the loop and `ask` do."""

from __future__ import annotations

from pilot_helpers import make, running, until
from textual.app import App  # noqa: F401 - loaded first, so conftest's notices_kept records notifications
from textual.widgets import Static

from tui_agent.core import slash
from tui_agent.core.limits import MAX_MESSAGE_CHARS, message_too_long
from tui_agent.core.store import history


def test_the_limit_is_one_rule() -> None:
    assert message_too_long("x" * MAX_MESSAGE_CHARS) is None
    reason = message_too_long("x" * (MAX_MESSAGE_CHARS + 1))
    assert reason is not None and reason.startswith("message too long (200,001 characters; the limit is 200,000)")


async def test_the_composer_refuses_a_long_message_with_cores_reason(env) -> None:
    app = make(env)
    text = "y" * (MAX_MESSAGE_CHARS + 5)
    async with app.run_test(size=(120, 40)) as pilot:
        app.conversation_view.composer.load_text(text)
        await pilot.press("enter")
        await until(pilot, lambda: app.__dict__.get("notices_seen"))
        reason = message_too_long(text)
        assert reason is not None
        assert app.notices_seen == [reason[:1].upper() + reason[1:]]  # type: ignore[attr-defined]
        assert app.conversation_view.composer.text == text and not app.turns


async def test_help_is_read_as_cores_parser_reads_it(env) -> None:
    """`/HELP` is /help to core's parser: the composer shows its help (keys too), nothing is sent."""
    assert slash.parse("/HELP") == slash.SlashCommand(slash.HELP)
    async with running(env) as (app, pilot):
        app.conversation_view.composer.load_text("/HELP")
        await pilot.press("enter")
        await until(pilot, lambda: any("Keys" in str(w.render()) for w in app.conversation_view.chat_log.query(Static)))
        assert not app.turns and app.conversation_view.composer.text == ""
    assert history.last_conversation() is None  # nothing stored, no conversation made


async def test_new_is_read_as_cores_parser_reads_it(env) -> None:
    """`/New` starts a new chat in the app, as /new does, without storing an empty conversation."""
    async with running(env) as (app, pilot):
        app.conversation_view.composer.load_text("/New")
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_view.composer.text == "")
        await pilot.pause()
        assert not app.turns and app.conversation_id is None
    assert history.last_conversation() is None
