"""A finished part of a streaming reply drawn into lines (FrozenPart) looks exactly like its blocks,
and its blocks come back as they were. Also the contract of Textual's private ``Compositor`` that
``frozen_part.draw`` relies on (``reflow`` a widget's subtree, ``render_strips``)."""

from __future__ import annotations

from typing import Any

from pilot_helpers import make, mount_after_a_turn, steady_screen, until
from textual.widget import Widget

from tui_agent.ui.typing_pace import pace_of
from tui_agent.ui.widgets import frozen_part, reply_markdown
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.frozen_part import FrozenPart, draw, freeze
from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

TEXT = (
    "# Heading\n\nA paragraph with **bold**, `code` and a [link](https://example.com).\n\n"
    "- one\n- two\n  - nested\n\n1. first\n2. second\n\n```python\nprint('hi')\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote\n\nThe end.\n"
)


async def test_a_frozen_part_shows_the_same_screen_as_its_blocks_and_thaws_back(env):
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(TEXT))
        await pilot.pause()
        app.conversation_view.chat_log.scroll_end(animate=False)
        part = bubble.query_one(ReplyMarkdown)
        await until(pilot, lambda: part.region.height > 0)
        before = await steady_screen(app, pilot)
        lines = draw(part)
        assert len(lines) == part.region.height and lines[0].cell_length == part.region.width
        frozen = await freeze(part)
        assert isinstance(frozen, FrozenPart) and not part.display
        await until(pilot, lambda: frozen.region.height == len(lines))  # laid out in the part's place
        assert app.export_screenshot() == before
        frozen.thaw()
        await until(pilot, lambda: not bubble.query(FrozenPart) and part.region.height == len(lines))
        assert part.display
        assert app.export_screenshot() == before


async def test_a_frozen_part_thaws_when_the_width_changes(env):
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(TEXT))
        part = bubble.query_one(ReplyMarkdown)
        await until(pilot, lambda: part.region.height > 0)
        assert await freeze(part) is not None
        await pilot.pause()
        await pilot.resize_terminal(80, 50)
        await until(pilot, lambda: part.display and not bubble.query(FrozenPart))


async def test_a_streaming_reply_with_frozen_parts_becomes_the_long_plain_view_whole(env, monkeypatch):
    """Past the Markdown limit mid-stream, the frozen parts go with the rest: the plain view holds the
    whole reply, and no drawn lines are left behind."""
    from fake_openai import markdown_tokens

    import tui_agent.ui.widgets.bubbles as bubbles
    from tui_agent.ui.widgets.long_text import LongText

    # Parts sealed every 4 blocks, not 16, and the plain view from 80 lines, not 300: the same
    # steps with a shorter reply.
    monkeypatch.setattr(reply_markdown, "SEAL_AFTER_BLOCKS", 4)
    monkeypatch.setattr(bubbles, "LONG_LINES", 80)
    tokens = markdown_tokens(1_000)
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
        frozen_seen = False
        for i in range(0, len(tokens), 40):
            await bubble.write("".join(tokens[i : i + 40]))
            await pilot.pause()
            frozen_seen = frozen_seen or bool(bubble.query(FrozenPart))
            assert frozen_seen or not bubble.is_long_view, "the plain view came before any part was frozen"
            if bubble.is_long_view:  # the rest goes on in the plain view
                await bubble.write("".join(tokens[i + 40 :]))
                break
        await bubble.finish("complete")
        await pilot.pause()
        assert frozen_seen
        assert bubble.is_long_view
        assert not bubble.query(FrozenPart) and not bubble.query(ReplyMarkdown)
        assert bubble.query_one(LongText).text.endswith("ENDOFREPLY")


async def test_parts_frozen_one_after_another_share_one_stand_in_that_looks_like_their_blocks(env):
    """Two parts frozen in turn: the second one's lines go under the first one's, in the same
    widget, and the screen is the same as with their blocks; thawed, both parts come back."""
    app = make(env)
    async with app.run_test(size=(100, 60)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble())
        first, second = (
            ReplyMarkdown(TEXT, classes="reply"),
            ReplyMarkdown("Then **more**.\n\n- a\n- b\n", classes="reply"),
        )
        await bubble.mount_all([first, second])
        await until(pilot, lambda: first.region.height > 0 and second.region.height > 0)
        app.conversation_view.chat_log.scroll_end(animate=False)
        before = await steady_screen(app, pilot)
        heights = first.region.height + second.region.height
        frozen = await freeze(first)
        assert frozen is not None and await freeze(second, into=frozen) is frozen
        assert len(bubble.query(FrozenPart)) == 1 and frozen.parts == [first, second]
        assert not first.display and not second.display
        await until(pilot, lambda: frozen.region.height == heights)  # laid out in the parts' place
        assert app.export_screenshot() == before
        frozen.thaw()
        await until(
            pilot, lambda: not bubble.query(FrozenPart) and first.region.height + second.region.height == heights
        )
        assert first.display and second.display
        assert app.export_screenshot() == before


async def _streamed_with_frozen_parts(app: Any, pilot: Any) -> tuple[AssistantBubble, FrozenPart]:
    """A reply streamed into a bubble until two or more of its parts share a stand-in (parts sealed
    every 4 blocks, not 16: the same steps with a shorter reply)."""
    from fake_openai import markdown_tokens

    def shared() -> FrozenPart | None:
        return next((stand_in for stand_in in bubble.query(FrozenPart) if len(stand_in.parts) >= 2), None)

    tokens = markdown_tokens(900)
    bubble = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
    for i in range(0, len(tokens), 30):
        await bubble.write("".join(tokens[i : i + 30]))
        await pilot.pause()
        if shared():  # the rest of the reply would only add parts of the same kind
            break
    await until(pilot, shared)
    app.conversation_view.chat_log.scroll_end(animate=False)
    stand_in = shared()
    assert stand_in is not None
    return bubble, stand_in


async def test_a_reply_that_ends_while_the_user_types_comes_back_part_by_part_once_the_keys_pause(env, monkeypatch):
    """All at once, the thaw is one layout of the whole reply, and a key typed then waits for it.
    While keys come, the parts stay drawn; once they pause, the parts come back one per frame from
    the last (the screen the same at each step), and a key between two steps holds the rest."""
    monkeypatch.setattr(reply_markdown, "SEAL_AFTER_BLOCKS", 4)
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        pace = pace_of(app)
        now = [1_000.0]
        pace.clock = lambda: now[0]
        bubble, stand_in = await _streamed_with_frozen_parts(app, pilot)
        before = await steady_screen(app, pilot)  # what was written is drawn (and frozen, if it is)
        parts = list(stand_in.parts)
        pace.typed()
        await bubble.finish("complete")
        await steady_screen(app, pilot)
        assert stand_in.is_attached and stand_in.parts == parts and stand_in.settled  # the keys have not paused
        assert not any(part.display for part in parts)

        steps: list[Widget] = []
        thaw_last = stand_in.thaw_last

        def one_step_then_a_key() -> None:
            steps.append(stand_in.parts[-1])
            thaw_last()
            if len(steps) == 1:
                pace.typed()  # a key right after the first step

        stand_in.thaw_last = one_step_then_a_key  # type: ignore[method-assign]
        now[0] += 1.0  # the keys pause
        await until(pilot, lambda: len(steps) == 1)
        assert await steady_screen(app, pilot) == before
        assert steps == [parts[-1]] and parts[-1].display and stand_in.parts == parts[:-1]
        assert not any(part.display for part in parts[:-1]) and len(steps) == 1

        now[0] += 1.0
        await until(pilot, lambda: not bubble.query(FrozenPart))
        assert steps == parts[::-1] and all(part.display for part in parts)
        assert await steady_screen(app, pilot) == before


async def test_a_reply_that_ends_while_no_key_comes_thaws_at_once_and_a_pointer_thaws_a_settled_one(env, monkeypatch):
    monkeypatch.setattr(reply_markdown, "SEAL_AFTER_BLOCKS", 4)
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        bubble, stand_in = await _streamed_with_frozen_parts(app, pilot)
        await bubble.finish("complete")  # no key typed: at once, as before
        assert all(part.display for part in stand_in.parts or bubble.query(ReplyMarkdown))
        await until(pilot, lambda: not bubble.query(FrozenPart))
        assert all(part.display for part in bubble.query(ReplyMarkdown))

        pace = pace_of(app)
        pace.clock = lambda: 1_000.0  # a key now, and the clock stopped: the keys never pause
        bubble, stand_in = await _streamed_with_frozen_parts(app, pilot)
        pace.typed()
        await bubble.finish("complete")
        assert stand_in.is_attached and stand_in.settled
        app.conversation_view.chat_log.scroll_to_widget(stand_in, top=True, animate=False)
        await pilot.pause()
        await pilot.hover(stand_in)
        await until(pilot, lambda: not bubble.query(FrozenPart))
        assert all(part.display for part in bubble.query(ReplyMarkdown))


async def test_a_part_is_not_frozen_while_another_screen_covers_the_chat(env):
    """Covered (the log, a picture), the chat screen is not laid out: a part sealed meanwhile still
    has the size it had before its last blocks moved on, and its drawn lines would show them twice."""
    from textual.screen import Screen

    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(TEXT))
        part = bubble.query_one(ReplyMarkdown)
        await until(pilot, lambda: part.region.height > 0)
        await app.push_screen(Screen())
        assert await freeze(part) is None and part.display and not bubble.query(FrozenPart)
        app.pop_screen()
        await until(pilot, lambda: app.screen is bubble.screen)
        assert await freeze(part) is not None and not part.display


async def test_a_frozen_part_under_the_message_cursor_looks_as_its_blocks_would(env):
    """The message cursor tints a reply while it streams: its frozen lines take the tint as its
    blocks would (drawn before the cursor came), and lose it when the cursor goes (drawn under it),
    code blocks and quotes included (their own backgrounds are blended over the reply's)."""
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(TEXT))
        log = app.conversation_view.chat_log
        log.scroll_end(animate=False)
        part = bubble.query_one(ReplyMarkdown)
        await until(pilot, lambda: part.region.height > 0)
        for cursor_when_drawn in (False, True):
            log.move_cursor_to(bubble if cursor_when_drawn else None, scroll=False)
            await steady_screen(app, pilot)
            frozen = await freeze(part)
            assert frozen is not None
            await until(pilot, lambda frozen=frozen: frozen.region.height > 0)
            log.move_cursor_to(None if cursor_when_drawn else bubble, scroll=False)
            await until(pilot, lambda on=not cursor_when_drawn: bubble.has_class("-cursor") == on)
            # Drawn again (the parts shown for a layout, then hidden behind their new lines).
            await until(
                pilot,
                lambda frozen=frozen: (
                    frozen.display and not part.display and frozen.drawn_on == frozen.visual_style.background
                ),
            )
            shown = await steady_screen(app, pilot)
            assert not part.display and bubble.query(FrozenPart)  # still the lines on screen
            frozen.thaw()
            await until(pilot, lambda: part.display and not bubble.query(FrozenPart))
            assert await steady_screen(app, pilot) == shown


async def test_lines_not_drawn_again_in_time_give_way_to_the_blocks(env, monkeypatch):
    """Drawing the lines again waits for a layout that shows the parts; when none comes in time
    (here: the app holds its updates in a batch) the parts are thawed, never left hidden behind a
    hidden stand-in (where a seal would hide the next part too)."""
    monkeypatch.setattr(frozen_part, "LAYOUT_WAIT_S", 0.3)
    app = make(env)
    async with app.run_test(size=(100, 50)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(TEXT))
        part = bubble.query_one(ReplyMarkdown)
        await until(pilot, lambda: part.region.height > 0)
        frozen = await freeze(part)
        assert frozen is not None and not part.display
        with app.batch_update():  # no layout until it ends
            await frozen._draw_again()
            assert part.display and frozen.parts == []  # thawed: shown, its stand-in going
        await until(pilot, lambda: part.display and not bubble.query(FrozenPart))
        assert not frozen._drawing_again
