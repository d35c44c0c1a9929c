"""A write to a streaming reply measures its growing block again, not every block of the growing part
(``widgets/column_arrange.py``), and the reply looks exactly as Textual would arrange it.

Textual keys a child's box model on the size of the container it is measured in; the growing part
was arranged in its own height, which grows at every write, so each of its blocks (with the rows of
its lists and the cells of its tables) was measured again at every write."""

from __future__ import annotations

import pytest
from fake_openai import markdown_tokens
from pilot_helpers import make, mount_after_a_turn
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

import tui_agent.ui.widgets.column_arrange as column_arrange
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.column_arrange import arrange_size, height_free
from tui_agent.ui.widgets.reply_markdown import ReplyMarkdown

pytestmark = pytest.mark.slow


def _placed(bubble: AssistantBubble) -> list[tuple[str, int, int, int, int]]:
    """Where each widget of the reply is, relative to the reply: what the screen draws of it."""
    x0, y0 = bubble.region.offset
    return [
        (type(widget).__name__, widget.region.x - x0, widget.region.y - y0, *widget.region.size)
        for widget in bubble.query("*")
        if widget.display
    ]


async def _streamed_screens(env, tokens: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    """Where the reply's widgets are after every few writes of it, and once it has finished."""
    app = make(env)
    screens = []
    async with app.run_test(size=(100, 40)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
        for i in range(0, len(tokens), 30):
            await bubble.write("".join(tokens[i : i + 30]))
            await pilot.pause()
            if i % 150 == 0:
                await pilot.pause()
                screens.append(_placed(bubble))
        await bubble.finish("complete")
        await pilot.pause()
        await pilot.pause()
        screens.append(_placed(bubble))
    return screens


async def test_a_streamed_reply_looks_the_same_as_textual_arranges_it(env, monkeypatch):
    """Headings, lists, code, tables and quotes, streamed: on the way and at the end, every widget of
    the reply is where (and as large as) Textual puts it with the reply arranged in its own height."""
    tokens = markdown_tokens(900)
    ours = await _streamed_screens(env, tokens)
    monkeypatch.setattr(column_arrange, "height_free", lambda widget: False)
    textuals = await _streamed_screens(env, tokens)
    assert len(ours) == len(textuals) > 4
    assert len(ours[-1]) > 100
    for at, (mine, theirs) in enumerate(zip(ours, textuals, strict=True)):
        assert mine == theirs, f"placements {at} differ"


async def test_a_write_measures_the_growing_block_not_the_finished_ones(env, monkeypatch):
    """Once a reply has several finished blocks in its growing part, a write to its last block (and
    the frame after it) measures none of them again."""
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        bubble = await mount_after_a_turn(app, pilot, AssistantBubble(thinking=True))
        tokens = markdown_tokens(230)  # a heading, a paragraph, a list, code, a table: one part
        for i in range(0, len(tokens), 40):
            await bubble.write("".join(tokens[i : i + 40]))
            await pilot.pause()
        await pilot.pause()
        live = bubble.query(ReplyMarkdown).last()
        finished = list(live.children[:-1])
        assert len(finished) >= 4
        inside = {widget for block in finished for widget in block.query("*")} | set(finished)
        measured: list[Widget] = []
        real = Widget.get_content_height

        def counting(widget: Widget, *args, **kwargs) -> int:
            if widget in inside:
                measured.append(widget)
            return real(widget, *args, **kwargs)

        monkeypatch.setattr(Widget, "get_content_height", counting)
        for word in (" more", " words", " here"):
            await bubble.write(word)
            await pilot.pause()
            await pilot.pause()
        assert live.children[-1] not in finished  # the writes went to a block after them
        assert measured == [], {type(widget).__name__ for widget in measured}
        await bubble.finish("complete")


class ProbeColumn(Widget):
    DEFAULT_CSS = "ProbeColumn { height: auto; } ProbeColumn > Static { height: auto; }"

    def __init__(self, *children: Widget, css: str = "") -> None:
        super().__init__(*children)
        if css:
            self.set_styles(css)


class _Probe(App[None]):
    def __init__(self, column: Widget) -> None:
        super().__init__()
        self.column = column

    def compose(self) -> ComposeResult:
        yield self.column


@pytest.mark.parametrize(
    ("child_css", "column_css", "free"),
    [
        ("height: auto;", "", True),
        ("height: 3;", "", True),
        ("height: auto; min-height: 2; max-height: 5;", "", True),
        ("height: 1fr;", "", False),
        ("height: 50%;", "", False),
        ("height: auto; max-height: 50%;", "", False),
        ("height: auto; dock: top;", "", False),
        ("height: auto;", "align-vertical: bottom;", False),
        ("height: auto;", "layout: horizontal;", False),
    ],
)
async def test_a_column_is_arranged_at_height_0_only_when_its_height_places_nothing(child_css, column_css, free):
    """Every rule by which a container's height moves or sizes a child keeps Textual's arrangement."""
    child = Static("x")
    child.set_styles(child_css)
    column = ProbeColumn(Static("a"), child, css=column_css)
    async with _Probe(column).run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        assert height_free(column) is free
        asked = Size(40, 17)
        assert arrange_size(column, asked) == (Size(40, 0) if free else asked)


async def test_a_child_with_no_height_rule_fills_its_container_so_keeps_textual_s_arrangement():
    """No ``height`` rule means as tall as the container (Textual's box model): not height-free."""
    child = Widget()
    column = Vertical(Static("a"), child)
    async with _Probe(column).run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        assert child.styles.height is None
        assert height_free(column) is False


async def test_textual_arranges_an_auto_height_column_the_same_at_any_height():
    """The premise, on Textual itself: a vertical column of auto and fixed-height children (a list
    of rows, as Markdown's lists are) is placed the same whatever height it is arranged in."""
    rows = [Horizontal(Static(f"item {n}\nsecond line"), classes="row") for n in range(3)]
    column = ProbeColumn(Static("head"), *rows)
    column.styles.height = "auto"
    for row in rows:
        row.styles.height = "auto"
    async with _Probe(column).run_test(size=(40, 30)) as pilot:
        await pilot.pause()
        assert height_free(column)
        placed = [
            [(p.region, p.widget) for p in Widget.arrange(column, Size(40, h)).placements] for h in (0, 7, 30, 200)
        ]
        assert all(p == placed[0] for p in placed)
        assert [region.height for region, _ in placed[0]] == [1, 2, 2, 2]


@pytest.mark.parametrize("how", ["inline", "class", "mount", "display", "column"])
async def test_the_answer_kept_for_a_column_changes_with_its_children_and_their_rules(how):
    """``arrange_size`` keeps its answer between changes: each way a column stops being height-free
    is seen at the next layout (a child's height by CSS or inline, a new child, a child shown, the
    column's own rule)."""

    class Column(ProbeColumn):
        DEFAULT_CSS = "Column { height: auto; } Column > Static { height: auto; } Column > .fill { height: 1fr; }"

    hidden = Static("hidden", classes="fill")
    hidden.display = False
    child = Static("b")
    column = Column(Static("a"), child, hidden)
    asked = Size(40, 17)
    async with _Probe(column).run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        assert arrange_size(column, asked) == Size(40, 0)
        assert arrange_size(column, asked) == Size(40, 0)  # kept
        if how == "inline":
            child.styles.height = "1fr"
        elif how == "class":
            child.add_class("fill")
        elif how == "mount":
            await column.mount(Static("c", classes="fill"))
        elif how == "display":
            hidden.display = True
        else:
            column.styles.align_vertical = "bottom"
        await pilot.pause()
        assert arrange_size(column, asked) == asked
