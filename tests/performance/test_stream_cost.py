"""A streamed reply costs the same per token at its end as at its start: the blocks it finished are
drawn once and kept; what a write restyles, lays out and draws again is the growing block (and
the few blocks before it in its part), never the whole reply."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from fake_openai import markdown_tokens
from pilot_helpers import make, mount_after_a_turn, until
from textual.layouts.vertical import VerticalLayout
from textual.widget import Widget

from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

pytestmark = pytest.mark.slow

TOKENS = 2_400  # about 90 top-level blocks of headings, paragraphs, lists, code, tables and quotes


@dataclass
class Costs:
    blocks: list[Widget] = field(default_factory=list)  # every block of the reply, in order
    inner: list[Widget] = field(default_factory=list)  # every widget inside those blocks
    parts: list[ReplyMarkdown] = field(default_factory=list)
    # Keyed by the widgets themselves, not id(): a widget removed during the reply (a growing block
    # parsed again) was freed, and a later block could get its id and its counts (under load, when
    # the collector ran at other moments, a block seemed restyled 4 to 6 times).
    restyled: Counter[object] = field(default_factory=Counter)  # per widget: styles applied
    rendered: Counter[object] = field(default_factory=Counter)  # per block: its own or its children's drawing made
    arranged: list[int] = field(default_factory=list)  # per layout of a reply part: the blocks it arranged
    arranged_per_part: Counter[object] = field(default_factory=Counter)
    arranged_sealed: Counter[object] = field(default_factory=Counter)  # per part: layouts once it was sealed
    writes: int = 0
    laid_out: list[int] = field(default_factory=list)  # per write: the reply's widgets Textual lays out
    stand_ins: list[int] = field(default_factory=list)  # per write: widgets drawing finished parts as lines
    restyled_at_finish: Counter[object] = field(default_factory=Counter)  # per widget: styles applied once it stopped
    finishing: bool = False
    frozen_left: int = 0  # parts still drawn as lines (or hidden) once the reply finished


def _laid_out(bubble: AssistantBubble) -> int:
    """The widgets of the reply a layout places: displayed, in displayed parents."""
    return sum(1 for w in bubble.query("*") if all(a.display for a in w.ancestors_with_self if a is not bubble))


async def _write(app, pilot, bubble: AssistantBubble, tokens: list[str], costs: Costs | None = None) -> int:
    """The reply's tokens written to the bubble as the turn writes them (a frame's worth at a time),
    each write drawn before the next (as a reply arriving at a steady pace is)."""
    for i in range(0, len(tokens), 40):
        await bubble.write("".join(tokens[i : i + 40]))
        await pilot.pause()
        await pilot.pause()
        if costs is not None:
            costs.laid_out.append(_laid_out(bubble))
            costs.stand_ins.append(len(bubble.query(".reply-frozen")))
    if costs is not None:
        costs.finishing = True
    await bubble.finish("complete")
    await pilot.pause()
    return len(range(0, len(tokens), 40))


async def _streamed(env, monkeypatch) -> Costs:
    costs = Costs()
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        # After a first turn, the warm-up is over: Markdown from the first word.
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
        stylesheet = app.stylesheet
        real_apply = stylesheet.apply
        real_render = Widget._render
        real_arrange = VerticalLayout.arrange

        def apply(node, *args, **kwargs):
            (costs.restyled_at_finish if costs.finishing else costs.restyled)[node] += 1
            return real_apply(node, *args, **kwargs)

        def render(widget):
            for ancestor in widget.ancestors_with_self:
                costs.rendered[ancestor] += 1
            return real_render(widget)

        def arrange(layout, parent, children, *args, **kwargs):
            if isinstance(parent, ReplyMarkdown):
                costs.arranged.append(len(children))
                costs.arranged_per_part[parent] += 1
                if parent.sealed:
                    costs.arranged_sealed[parent] += 1
            return real_arrange(layout, parent, children, *args, **kwargs)

        monkeypatch.setattr(stylesheet, "apply", apply)
        monkeypatch.setattr(Widget, "_render", render)
        monkeypatch.setattr(VerticalLayout, "arrange", arrange)
        costs.writes = await _write(app, pilot, bubble, markdown_tokens(TOKENS), costs)
        assert bubble.text.endswith("ENDOFREPLY")
        costs.parts = list(bubble.query(ReplyMarkdown))
        costs.frozen_left = len(bubble.query(".reply-frozen")) + sum(not part.display for part in costs.parts)
        costs.blocks = [block for part in costs.parts for block in part.children]
        costs.inner = [widget for block in costs.blocks for widget in block.query("*")]
    return costs


@dataclass
class Measured:
    """What the two tests below read of one streamed reply, as numbers: no widget is kept (a later
    test in this process must not find the reply's widgets alive). Per block, per widget inside the
    blocks and per part: in the reply's order."""

    blocks: int
    parts: int
    inner: int
    writes: int
    arranged: list[int]
    arranged_per_part: list[int]
    arranged_sealed: list[int]
    laid_out: list[int]
    stand_ins: list[int]
    frozen_left: int
    restyled_blocks: list[int]
    restyled_inner: list[int]
    restyled_at_finish_blocks: list[int]
    rendered_blocks: list[int]


_MEASURED: list[Measured] = []


async def _measured(env, monkeypatch) -> Measured:
    """The streamed reply, measured once per test process for the two tests below (the measurement
    was two of the suite's heaviest minutes of CPU, the same reply streamed twice)."""
    if not _MEASURED:
        costs = await _streamed(env, monkeypatch)
        _MEASURED.append(
            Measured(
                blocks=len(costs.blocks),
                parts=len(costs.parts),
                inner=len(costs.inner),
                writes=costs.writes,
                arranged=costs.arranged,
                arranged_per_part=[costs.arranged_per_part[part] for part in costs.parts],
                arranged_sealed=[costs.arranged_sealed[part] for part in costs.parts],
                laid_out=costs.laid_out,
                stand_ins=costs.stand_ins,
                frozen_left=costs.frozen_left,
                restyled_blocks=[costs.restyled[b] for b in costs.blocks],
                restyled_inner=[costs.restyled[w] for w in costs.inner],
                restyled_at_finish_blocks=[costs.restyled_at_finish[b] for b in costs.blocks],
                rendered_blocks=[costs.rendered[b] for b in costs.blocks],
            )
        )
    return _MEASURED[0]


async def test_a_write_lays_out_restyles_and_draws_only_the_growing_part_of_a_long_reply(env, monkeypatch):
    """One streamed reply, measured once (the layouts, styles and drawings of the same writes)."""
    costs = await _measured(env, monkeypatch)
    assert costs.blocks > 60
    assert costs.parts >= 3
    # No layout of the reply arranges more than one part's blocks (and those a write adds), however
    # many blocks came before. In one Markdown widget, the last layouts arranged them all.
    assert max(costs.arranged) < costs.blocks / 2
    # A sealed part is laid out a bounded number of times, not once per later write.
    first, later = 0, -2  # the first part, and the last but one
    assert costs.arranged_per_part[first] <= 2 * costs.arranged_per_part[later] + 10
    # Once sealed, a part is not arranged again as the bubble grows around it: measuring its height
    # in the taller bubble at each write arranged it (and its lists, tables, quotes) every time.
    assert costs.writes > 40
    assert costs.arranged_sealed[first] <= 6


async def test_a_layout_near_the_end_of_a_long_reply_places_as_many_widgets_as_near_its_start(env, monkeypatch):
    """Textual's layout walks every displayed widget: the reply's finished parts are drawn into lines
    (one widget each) while it streams, so the widgets laid out stay about as many as the reply grows.
    Once it has finished, every block is back (links, selection)."""
    costs = await _measured(env, monkeypatch)
    third, last = costs.laid_out[len(costs.laid_out) // 3], costs.laid_out[-1]
    assert costs.blocks > 60
    assert last <= 1.5 * third, costs.laid_out
    # However many parts were sealed, their lines are one widget: each widget costs every layout.
    assert max(costs.stand_ins) == 1, costs.stand_ins
    assert costs.frozen_left == 0

    # The finished blocks are not restyled or drawn again as the reply grows.
    # Per block: once or twice (mounted; marked last while it was), whatever number of blocks came
    # after it. With a :last-child rule, every block was restyled at each mount after it.
    assert max(costs.restyled_blocks) <= 3
    # What is inside a block (a list's items, a quote's paragraphs) is styled when it is mounted and
    # not again when the block stops being the last (its ``-last`` class): that restyled all of it.
    assert costs.inner > costs.blocks
    assert max(costs.restyled_inner) <= 1
    # When it stops, the parts drawn as lines meanwhile show their blocks again: once each, at most.
    assert max(costs.restyled_at_finish_blocks) <= 1
    # Drawn: once per write while it was growing, then not again for the rest of the reply: the
    # first blocks as often as blocks of the same kinds near the end.
    early, late = costs.rendered_blocks[:14], costs.rendered_blocks[-28:-14]
    assert max(early) <= 2 * max(late) + 4


async def test_a_streamed_reply_in_parts_looks_like_the_same_reply_in_one_widget(env):
    """The parts are drawn as one Markdown widget draws the whole reply: same lines, same gaps."""
    tokens = markdown_tokens(900)
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        streamed = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
        await _write(app, pilot, streamed, tokens)
        assert len(streamed.query(ReplyMarkdown)) >= 2
        whole = AssistantBubble("".join(tokens))
        await app.conversation_view.chat_log.mount(whole)
        await pilot.pause()
        # Laid out (the whole reply's Markdown blocks mounted): later than a fixed pause on a loaded machine.
        await until(pilot, lambda: streamed.outer_size == whole.outer_size, what="the whole reply never laid out alike")
        assert len(whole.query(ReplyMarkdown)) == 1
        assert streamed.outer_size == whole.outer_size


async def test_textual_markdown_contract_reply_markdown_relies_on():
    """What ReplyMarkdown and ReplyStream take from Textual's Markdown (public names, but behaviour
    that could change): mounting calls ``update()`` with the widget's text (``ready`` is set by
    it), ``append()`` adds blocks after the last one (one widget per top-level block, in the order
    block_starts finds them), and a block's top margin is in ``styles.margin``."""
    from textual.app import App

    from tui_agent.ui.widgets.reply_markdown import block_starts

    class Host(App[None]):
        pass

    app = Host()
    async with app.run_test(size=(80, 30)) as pilot:
        made = ReplyMarkdown("first\n\n- a\n- b\n")
        await app.screen.mount(made)
        await pilot.pause()
        assert made.ready.is_set()
        assert [type(b).__name__ for b in made.children] == ["MarkdownParagraph", "MarkdownBulletList"]
        empty = ReplyMarkdown()
        await app.screen.mount(empty)
        await empty.ready.wait()
        text = "# Title\n\npara\n\n- one\n- two\n\n```\ncode\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n"
        await empty.append(text[:30])
        await empty.append(text[30:])
        await pilot.pause()
        kinds = [type(b).__name__ for b in empty.children]
        assert kinds == [
            "MarkdownH1",
            "MarkdownParagraph",
            "MarkdownBulletList",
            "MarkdownFence",
            "MarkdownTable",
            "MarkdownBlockQuote",
        ]
        assert len(block_starts(text)) == len(kinds)
        assert empty.children[-1].has_class("-last") and not empty.children[0].has_class("-last")
        margins = [b.styles.margin.top for b in empty.children]
        assert margins[1] == 0 and margins[3] > 0 and margins[5] > 0  # what a split point is chosen by
