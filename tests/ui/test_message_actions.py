"""The message cursor and its actions in the app: copy (OSC 52 captured), copy to prompt,
regenerate with alternatives, edit and resend with branches, export."""

from __future__ import annotations

import base64

import pytest
from fake_openai import Reply
from helpers import rows
from pilot_helpers import one_turn, running, send, settle, steady_screen, text_backgrounds, until

from tui_agent.core.store import branches, history
from tui_agent.ui.widgets.alternatives import AlternativesBar
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble

REPLY = "Here:\n\n```python\nprint('hi')\n```\n\nand\n\n```sh\nls -l\n```\n"


def capture_terminal(app) -> list[str]:
    written: list[str] = []
    original = app._driver.write

    def write(data: str) -> None:
        written.append(data)
        original(data)

    app._driver.write = write
    return written


def copied(written: list[str]) -> list[str]:
    prefix = "\x1b]52;c;"
    return [base64.b64decode(w[len(prefix) : -1]).decode() for w in written if w.startswith(prefix)]


@pytest.mark.slow
async def test_cursor_moves_through_messages_and_back_to_the_composer(env):
    async with one_turn(env, "first", "one", "two") as (app, pilot):
        await send(app, pilot, "second")
        await pilot.press("up")
        assert app.focused is app.conversation_view.chat_log
        assert [w.text for w in app.conversation_view.chat_log.query(".-cursor")] == ["two"]
        await pilot.press("up", "up")
        assert [w.text for w in app.conversation_view.chat_log.query(".-cursor")] == ["one"]
        await pilot.press("down")
        assert [w.text for w in app.conversation_view.chat_log.query(".-cursor")] == ["second"]
        await pilot.press("down", "down")
        assert app.focused is app.conversation_view.composer and not app.conversation_view.chat_log.query(".-cursor")
        await pilot.press("alt+up")
        assert [w.text for w in app.conversation_view.chat_log.query(".-cursor")] == ["two"]
        await pilot.press("escape")
        assert app.focused is app.conversation_view.composer


async def test_the_footer_shows_the_cursor_keys_and_is_not_rebuilt_between_messages(env):
    """The cursor's keys come into the footer with the cursor and leave with it; moving from one
    message to the next keeps the same keys, so the footer (which builds all its keys again at each
    refresh of the bindings) is not rebuilt at every Up or Down.

    Entering the log from the composer moves the focus, and Textual refreshes the bindings for that
    twice: at once and after the next repaint. The cursor's keys are in the footer from the first
    rebuild on, so the keys compared are taken only after the second rebuild (CI on a602364 took
    them between the two, and the second rebuild landed among the cursor's moves)."""
    import asyncio

    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    async with one_turn(env, "first", "one", "two") as (app, pilot):
        await send(app, pilot, "second")
        await until(pilot, lambda: app.query(Footer) and app.query_one(Footer).query(FooterKey))
        footer = app.query_one(Footer)

        def shown() -> set[str]:
            return {key.key for key in footer.query(FooterKey)}

        assert "c" not in shown()
        await pilot.press("up")
        await until(pilot, lambda: "c" in shown(), what="the cursor's keys never came into the footer")
        rebuilt = asyncio.Event()  # set once the footer has taken in the focus change's last refresh:

        def after_the_refresh() -> None:  # runs after it: both wait for the same repaint, this queued last
            footer.call_next(after_the_footer_heard)

        def after_the_footer_heard() -> None:  # after the footer's own callback, queued before it
            footer.call_after_refresh(rebuilt.set)  # after the rebuild that callback scheduled

        app.screen.call_after_refresh(after_the_refresh)
        await until(pilot, rebuilt.is_set, what="the footer never took in the focus change")
        keys = list(footer.query(FooterKey))
        await pilot.press("up", "up", "down")
        await pilot.pause()
        assert [w.text for w in app.conversation_view.chat_log.query(".-cursor")] == ["second"]
        assert list(footer.query(FooterKey)) == keys  # the same key widgets: not built again
        await pilot.press("escape")
        await until(pilot, lambda: "c" not in shown(), what="the cursor's keys stayed in the footer")


async def test_the_cursor_tint_is_behind_the_text_of_its_message_and_leaves_with_it(env):
    """The message cursor tints its message: the cells of the text too, not only the rows around
    it, and the text's background is plain again once the cursor has gone. A message drawn before
    the cursor came (all but a new one) kept its text's old background: the widgets in it cache
    what they draw with, and the cursor restyles the message alone."""
    async with one_turn(env, "first", "**one**, said twice") as (app, pilot):
        reply = app.conversation_view.chat_log.query(AssistantBubble).last()
        await steady_screen(app, pilot)  # drawn without the cursor first
        plain = text_backgrounds(reply)
        await pilot.press("up")
        await until(pilot, lambda: reply.has_class("-cursor"))
        await steady_screen(app, pilot)
        tint = reply.visual_style.background.rich_color
        assert tint not in plain
        assert text_backgrounds(reply) == {tint}
        await pilot.press("escape")
        await until(pilot, lambda: not reply.has_class("-cursor"))
        await steady_screen(app, pilot)
        assert text_backgrounds(reply) == plain


async def test_click_selects_a_message(env):
    async with one_turn(env, "first", "one") as (app, pilot):
        user = app.conversation_view.chat_log.query_one(UserBubble)
        await pilot.click(user)
        await pilot.pause()
        assert app.conversation_view.chat_log.cursor is user and user.has_class("-cursor")


@pytest.mark.slow
async def test_copy_message_and_code_block_send_osc52(env):
    async with one_turn(env, "show me code", Reply(text=REPLY)) as (app, pilot):
        written = capture_terminal(app)
        await pilot.press("up", "c")
        await pilot.pause()
        assert copied(written) == [REPLY]
        # The actions menu lists both code blocks; the second one is copied alone.
        await pilot.press("enter")
        await pilot.pause()
        labels = [str(o.prompt) for o in app.screen.query_one("#message-action-list").options]
        assert any(label.startswith("Copy code block 1 (python, 1 line: print('hi')") for label in labels)
        assert any(label.startswith("Copy code block 2 (sh, 1 line: ls -l") for label in labels)
        await pilot.press("down", "down")  # copy whole, code block 1, code block 2
        await pilot.press("enter")
        await pilot.pause()
        assert copied(written)[-1] == "ls -l\n"
        assert app.focused is app.conversation_view.chat_log and app.conversation_view.chat_log.cursor is not None
        notices = app.notices_seen
        assert any(m.startswith("Copied ") and "OSC 52" in m for m in notices)


async def test_copy_to_prompt(env):
    async with one_turn(env, "q", "reuse me") as (app, pilot):
        await pilot.press("up", "p")
        await pilot.pause()
        assert app.conversation_view.composer.text == "reuse me" and app.focused is app.conversation_view.composer


@pytest.mark.slow
async def test_regenerate_keeps_alternatives_and_left_right_switch(env):
    async with one_turn(env, "hello", "first answer", "second answer", "later") as (app, pilot):
        await pilot.press("up", "r")
        await settle(app, pilot)
        (bubble,) = list(app.conversation_view.chat_log.query(AssistantBubble))
        assert bubble.text == "second answer"
        bar = bubble.query_one(AlternativesBar)
        assert bar.label() == "2 / 2"
        assert env.fake.chat_requests[1]["messages"] == env.fake.chat_requests[0]["messages"]
        # Left (the cursor stayed on the new reply): the first answer is back on screen and is
        # what the next request sees.
        await pilot.press("left")
        await pilot.pause()
        (bubble,) = list(app.conversation_view.chat_log.query(AssistantBubble))
        assert bubble.text == "first answer" and bubble.query_one(AlternativesBar).label() == "1 / 2"
        await pilot.press("escape")
        await send(app, pilot, "go on")
        sent = [m["content"] for m in env.fake.chat_requests[2]["messages"][1:]]
        assert sent == ["hello", "first answer", "go on"]
    stored = rows(env.vault.db_path, "SELECT role, content FROM messages ORDER BY id")
    assert stored == [
        ("user", "hello"),
        ("assistant", "first answer"),
        ("assistant", "second answer"),
        ("user", "go on"),
        ("assistant", "later"),
    ]


@pytest.mark.slow
async def test_edit_and_resend_branches_and_the_marker_switches_back(env):
    async with one_turn(env, "a", "A", "B", "C") as (app, pilot):
        await send(app, pilot, "b")
        await pilot.press("up", "up", "e")
        await pilot.pause()
        assert app.conversation_view.composer.text == "b" and app.focused is app.conversation_view.composer
        app.conversation_view.composer.load_text("c")
        await pilot.press("enter")
        await settle(app, pilot)
        assert [m["content"] for m in env.fake.chat_requests[2]["messages"][1:]] == ["a", "A", "c"]
        users = list(app.conversation_view.chat_log.query(UserBubble))
        assert [u.text for u in users] == ["a", "c"]
        assert users[1].query_one(AlternativesBar).label() == "branch 2 / 2"
        # The old branch is one key away.
        await pilot.click(users[1])
        await pilot.press("left")
        await pilot.pause()
        assert [w.text for w in app.conversation_view.chat_log.query("UserBubble, AssistantBubble")] == [
            "a",
            "A",
            "b",
            "B",
        ]
    conversation = history.list_conversations()[0]
    assert [m.content for m in history.recent_messages(conversation.id)] == ["a", "A", "b", "B"]
    assert len(branches.fork_parents(conversation.id)) == 1


async def test_escape_stops_editing_without_sending(env):
    async with one_turn(env, "a", "A") as (app, pilot):
        await pilot.press("up", "up", "e")
        await pilot.press("escape")
        assert app.conversation_view.editing is None and app.conversation_view.composer.text == ""
    assert len(env.fake.chat_requests) == 1


async def test_export_from_the_palette_actions(env):
    async with one_turn(env, "keep this", "exported") as (app, pilot):
        await app.run_action("export_markdown")
        await app.run_action("export_json")
        await pilot.pause()
    exports = sorted(p.name for p in (env.vault.root / "exports").iterdir())
    assert [name.rsplit(".", 1)[1] for name in exports] == ["json", "md"]
    markdown = next((env.vault.root / "exports").glob("*.md")).read_text()
    assert "## User\n\nkeep this" in markdown and "## Assistant\n\nexported" in markdown


async def test_export_from_the_app_never_overwrites_or_follows_a_link(env, tmp_path):
    """A link planted in the vault's exports/ at the default name (a vault may come from a cloned
    repository) is left alone, and a second export does not replace the first (issue 26.7)."""
    from tui_agent.core import export
    from tui_agent.core.store import history

    env.fake.script(Reply(text="exported"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    async with running(env) as (app, pilot):
        await send(app, pilot, "keep this")
        folder = env.vault.root / "exports"
        folder.mkdir()
        planted = folder / export.default_name(history.get_conversation(app.conversation_id), "md")
        planted.symlink_to(victim)
        await app.run_action("export_markdown")
        await app.run_action("export_markdown")
        await pilot.pause()
    assert victim.read_text() == "precious\n" and planted.is_symlink()
    written = sorted(p for p in folder.glob("*.md") if not p.is_symlink())
    assert [p.name for p in written] == [planted.stem + "~2.md", planted.stem + "~3.md"]
    assert all("## Assistant\n\nexported" in p.read_text() for p in written)


@pytest.mark.slow
async def test_theme_is_remembered_across_runs_from_palette_or_sidebar(env):
    from textual.widgets import Select

    async with running(env) as (app, pilot):
        assert app.theme == "textual-dark"
        app.theme = "nord"  # what the palette's "Change theme" does
        await pilot.pause()
    async with running(env) as (app, pilot):
        await pilot.pause()
        assert app.theme == "nord"
        await pilot.press("ctrl+b")
        await pilot.pause()
        app.query_one("#theme-select", Select).value = "textual-light"
        await pilot.pause()
        assert app.theme == "textual-light"
    async with running(env) as (app, pilot):
        await pilot.pause()
        assert app.theme == "textual-light"


async def test_context_meter_and_window_marker(env):
    from tui_agent.core import profiles
    from tui_agent.ui.widgets.context_meter import ContextMeter

    profiles.set_field(env.profile, "context_budget_tokens", "500")
    env.reload_profile()
    long_text = "word " * 300  # ~375 tokens: two of these do not fit in 500
    async with one_turn(env, long_text, "short", "short again") as (app, pilot):
        meter = app.query_one(ContextMeter)
        # The server's usage wins over the estimate once the reply is in.
        assert meter.estimated is False and meter.budget == 500
        assert not app.conversation_view.chat_log.query(".window-marker")
        await send(app, pilot, long_text + "again")
        sent = env.fake.chat_requests[1]["messages"]
        assert sent[1]["content"] == "short"  # the first long message was left out to fit
        (marker,) = app.conversation_view.chat_log.query(".window-marker")
        following = app.conversation_view.chat_log.children[app.conversation_view.chat_log.children.index(marker) + 1]
        assert following.text == "short"
        # Near the budget the meter turns red.
        meter.show(480, 500, estimated=True)
        assert meter.has_class("-full") and "~480 / 500 (96%)" in str(meter.render())
        meter.show(400, 500, estimated=True)
        assert meter.has_class("-warn") and not meter.has_class("-full")
