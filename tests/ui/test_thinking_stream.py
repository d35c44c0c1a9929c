"""A live "Thinking" block streams a long reasoning at the same cost per write at its end as at its
start (its finished lines are drawn once, only its last lines again), shows the same lines as the
whole text in one widget, and while the user types its writes go between the keys, as the reply's
do (issue 39 item 1)."""

from __future__ import annotations

import pytest
from pilot_helpers import make, send, until
from test_typing_pace import Clock

from tui_agent.ui.typing_pace import MIN_GAP_S, pace_of
from tui_agent.ui.widgets.thinking import FREEZE_CHARS, ThinkingBlock, split_done

pytestmark = pytest.mark.slow


def reasoning(paragraphs: int) -> list[str]:
    """A long reasoning as it streams: paragraphs of lines, some of them wrapped, written a few
    words at a time."""
    text = "".join(
        f"Step {i}: weigh option {i} against {i + 1}; "
        + ("the numbers differ in the tenths, so the tenths decide. " * (1 + i % 4))
        + ("\n" if i % 3 else "\n\n")
        for i in range(paragraphs)
    )
    return [text[i : i + 23] for i in range(0, len(text), 23)]


def text_widgets(block: ThinkingBlock) -> list:
    return list(block.query(".thinking-text"))


def test_split_done_keeps_whole_lines_that_more_text_follows():
    assert split_done("a\n\nb partial") == ("a\n", "b partial")
    assert split_done("a\nb\nc") == ("a\nb", "c")
    assert split_done("one line, still growing") == ("", "one line, still growing")
    # Blank lines at the end may be stripped when the text ends there: never frozen yet.
    assert split_done("a\nb\n\n  \n") == ("a", "b\n\n  \n")


async def test_a_long_reasoning_redraws_only_its_last_lines_and_shows_the_whole_text(env):
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        await send(app, pilot, "hi")
        log = app.conversation_view.chat_log
        live = ThinkingBlock(live=True)
        await log.mount(live)
        pieces = reasoning(120)
        redrawn: list[int] = []  # per write: the characters the block drew again
        for i in range(0, len(pieces), 10):
            live.append("".join(pieces[i : i + 10]))
            await until(pilot, lambda: live._drawn == len(live.text))
            redrawn.append(len(str(live.body.render())))
        whole = "".join(pieces)
        assert live.text == whole
        longest_line = max(len(line) for line in whole.splitlines())
        frozen = text_widgets(live)[:-1]
        assert len(frozen) >= 5, "the reasoning's finished lines were never frozen"
        # A write near the end draws as much again as one near the start: the growing lines only.
        assert max(redrawn) <= FREEZE_CHARS + longest_line + 1, redrawn
        # Nothing lost, nothing twice: the frozen lines and the last ones are the whole text.
        assert live.shown() == whole.strip()

        # The same lines as the whole reasoning in one widget (a reopened conversation's block).
        reopened = ThinkingBlock(whole.strip())
        await log.mount(reopened)
        reopened.collapsed = False
        await pilot.pause()
        await until(pilot, lambda: all(w.size.height for w in text_widgets(reopened)))
        assert text_widgets(live)[0].size.width == text_widgets(reopened)[0].size.width
        assert sum(w.size.height for w in text_widgets(live)) == text_widgets(reopened)[0].size.height

        # The reply's first words were reasoning after all: the block's text starts with them, and
        # the lines frozen before are gone before the new ones are drawn (never shown twice).
        await live.replace("Aside.\n" + whole)
        assert live.shown() == ("Aside.\n" + whole).strip()

        live.finish()
        await pilot.pause()
        assert live.collapsed and live.shown() == ("Aside.\n" + whole).strip()


async def test_while_the_user_types_the_reasoning_is_written_behind_the_keys_and_whole_at_the_answer(env):
    app = make(env)
    async with app.run_test(size=(100, 40)) as pilot:
        clock = Clock()
        pace_of(app).clock = clock
        await send(app, pilot, "hi")
        live = ThinkingBlock(live=True)
        await app.conversation_view.chat_log.mount(live)
        live.append("First thoughts.")
        await until(pilot, lambda: live.shown() == "First thoughts.")

        app.conversation_view.composer.focus()
        clock.now += MIN_GAP_S
        await pilot.press("a")  # the user types: a write goes right behind the key...
        live.append(" Second.")
        await until(pilot, lambda: live.shown() == "First thoughts. Second.", what="the write behind the key")
        live.append(" Third.")  # ...and the next one waits for the next key
        await pilot.pause(0.3)  # the test's clock stands still: no key, no write
        assert live.shown() == "First thoughts. Second."
        clock.now += MIN_GAP_S
        await pilot.press("b")
        await until(
            pilot, lambda: live.shown() == "First thoughts. Second. Third.", what="the write behind the next key"
        )

        live.append(" Fourth.")
        await pilot.pause(0.3)
        assert live.shown().endswith("Third.")  # held...
        live.finish()  # ...until the answer starts: then at once, whole
        assert live.shown() == "First thoughts. Second. Third. Fourth."
        assert app.conversation_view.composer.text.endswith("ab")
