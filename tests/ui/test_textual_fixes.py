"""Work-arounds for Textual bugs: memory held by widgets the chat log has let go of is freed
(Textual #6665); a widget whose content changes twice around a layout gets its new height."""

from __future__ import annotations

import gc
import weakref

import pytest
from pilot_helpers import running
from textual.app import App, ComposeResult
from textual.color import Color
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Markdown, Static

from tui_agent.core.store import history
from tui_agent.ui import textual_fixes
from tui_agent.ui.widgets.bubbles import AssistantBubble


def _conversation(count: int) -> int:
    """Replies of both kinds: plain paragraphs (drawn by the bubble itself) and Markdown (a widget per block)."""
    conversation = history.new_conversation("many").id
    for i in range(count):
        text = f"message {i} **bold** text" if i % 4 != 3 else f"message {i}\n\n- a list\n- of two"
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", text)
    return conversation


@pytest.mark.slow
async def test_render_caches_of_removed_bubbles_are_freed(env):
    conversation = _conversation(30)
    async with running(env, size=(100, 40)) as (app, pilot):
        await app.conversation_view.open_conversation(conversation)
        await pilot.pause()
        rendered = [w for w in app.conversation_view.chat_log.query("*") if w.region.height > 0]
        assert len(rendered) > 10
        assert any(isinstance(w, Markdown) for w in rendered)
        assert any(isinstance(w, AssistantBubble) and not w.children for w in rendered)
        caches = [weakref.ref(w._styles_cache) for w in rendered if w._styles_cache._cache]
        assert len(caches) > 10  # they drew lines: their caches hold them
        del rendered
        await app.conversation_view.open_conversation(None)  # the log lets every bubble go
        await pilot.pause()
        gc.collect()
        alive = [c for c in caches if c() is not None]
        assert alive == [], f"{len(alive)} of {len(caches)} render caches of removed widgets still held"


def test_the_work_around_keeps_the_colours():
    from textual._styles_cache import StylesCache

    textual_fixes.apply()
    textual_fixes.apply()  # idempotent
    inner, outer = StylesCache.get_inner_outer(Color(10, 20, 30), Color(255, 0, 0, 0.5))
    assert inner.background == Color(10, 20, 30) + Color(255, 0, 0, 0.5)
    assert outer.background == Color(10, 20, 30)


class _Reply(App[None]):
    CSS = "#bubble { height: auto; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(), Vertical(id="bubble"):
            yield Static("first words", id="reply")


async def test_a_reply_updated_again_before_its_layout_ran_gets_its_new_height():
    """The end of a streamed reply stayed off screen in long sessions: its paragraph kept the height
    of its first words. The sequence, forced here in its real order: the paragraph gets more text
    (it asks for a layout), the screen lays out before the paragraph's turn comes (another widget,
    the bubble, asked too), then the rest of the reply arrives before the paragraph's turn."""
    textual_fixes.apply()
    app = _Reply()
    async with app.run_test(size=(40, 20)) as pilot:
        reply = app.query_one("#reply", Static)
        await pilot.pause()
        reply.update("first words and more")
        for ancestor in (app.query_one("#bubble"), app.query_one(VerticalScroll)):
            ancestor._clear_arrangement_cache()
            ancestor._layout_updates += 1  # what the bubble's own layout request does
        app.screen._refresh_layout()
        assert reply.size.height == 1
        reply.update("word " * 60)  # 300 characters: 8 lines of 40
        await pilot.pause()
        await pilot.pause()
        assert reply.size.height == 8
        assert app.query_one("#bubble").size.height == 8


STRIP_OPERATIONS = """
import json, sys
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import Monochrome
from textual.strip import Strip
if sys.argv[1] == "fixed":
    from tui_agent.ui import textual_fixes
    textual_fixes.apply()
bold, red = Style(bold=True), Style(color="red")
out = []
for text in ("", "hello world", "wide 漢字 text and more", "x" * 200):
    strip = Strip([Segment(text[:5], bold), Segment(text[5:], red)])
    for _ in range(2):  # the second time from the caches
        out.append([
            strip.text, strip.cell_length,
            strip.crop(2, 9).text, [s.text for s in strip.divide([3, 7, 50])],
            [str(s.style) for s in strip.apply_style(red)],
            strip.adjust_cell_length(30, bold).text, strip.crop_extend(1, 40, red).text,
            [str(s.style) for s in strip.apply_filter(Monochrome(), Color(0, 0, 0))],
            [s.text for s in strip.simplify()], str(strip.apply_offsets(3, 4)._segments),
        ])
print(json.dumps(out))
"""


def test_strips_give_the_same_lines_with_their_caches_made_on_first_use():
    import subprocess
    import sys

    def run(mode: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", STRIP_OPERATIONS, mode], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    plain = run("plain")
    assert len(plain) > 1000  # every operation, on every strip, gave its lines
    assert run("fixed") == plain


@pytest.mark.slow
def test_a_strip_makes_no_cache_it_does_not_use():
    """Seven caches a strip were nine tracked objects in ten of a long session: each full collection
    walked them all, in the middle of a streamed reply."""
    from rich.segment import Segment
    from textual.cache import FIFOCache
    from textual.strip import Strip

    textual_fixes.apply()
    gc.collect()
    before = sum(isinstance(o, FIFOCache) for o in gc.get_objects())
    strips = [Strip([Segment(f"line {i}")]) for i in range(1_000)]
    cropped = [strip.crop(0, 4) for strip in strips]  # uses one cache of each strip
    made = sum(isinstance(o, FIFOCache) for o in gc.get_objects()) - before
    assert made == len(strips)  # the crop caches, nothing else (it was 7 a strip, crops included)
    assert [c.text for c in cropped[:2]] == ["line", "line"]


def test_a_strip_cut_at_its_own_length_is_freed_by_reference_counting():
    """Cut at its own length a strip was ``[self]`` cached in itself: a cycle the compositor made of
    every line of every widget, each left with its segments for a full collection."""
    import sys

    from rich.segment import Segment
    from textual.strip import Strip

    textual_fixes.apply()
    strip = Strip([Segment("abc"), Segment("def")])
    references = sys.getrefcount(strip)
    assert strip.divide([6]) == [strip] and strip.divide([6])[0] is strip
    assert sys.getrefcount(strip) == references  # nothing of it holds it: no cycle
    assert [part.text for part in strip.divide([2, 6])] == ["ab", "cdef"]  # other cuts as before


class _Styled(Static):
    COMPONENT_CLASSES = {"part"}
    DEFAULT_CSS = "_Styled > .part { text-style: bold; } _Styled.other > .part { text-style: italic; }"


async def test_a_restyle_frees_the_component_nodes_it_replaces():
    """Each restyle of a widget with component classes made new virtual nodes and left the old ones
    (each a cycle with its styles) for a full collection: three per reply bubble."""
    textual_fixes.apply()

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield _Styled("x")

    app = Host()
    async with app.run_test() as pilot:
        widget = app.query_one(_Styled)
        assert widget.get_component_rich_style("part").bold
        old = weakref.ref(widget._component_styles["part"].node)
        was = gc.isenabled()
        gc.disable()
        try:
            widget.add_class("other")
            await pilot.pause()
            assert old() is None  # replaced, and freed at once
            widget._rich_style_cache.clear()
            style = widget.get_component_rich_style("part")
            assert style.italic and not style.bold  # the new nodes give the new styles
        finally:
            if was:
                gc.enable()


async def test_an_arrangement_hands_back_a_map_nothing_else_holds():
    """The compositor's arranging function calls itself, a cycle that held the map and set it
    returned (every widget in them, released ones too) until a full collection."""
    import sys

    textual_fixes.apply()

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("x")

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        placed, widgets = app.screen._compositor._arrange_root(app.screen, app.screen.size)
        assert app.query_one(Static) in placed and app.query_one(Static) in widgets
        assert sys.getrefcount(placed) == 2 and sys.getrefcount(widgets) == 2  # the name, the call's argument


FIX_NAMES = [
    "unpin_styles_caches",
    "layout_refresh_invalidates_box_model",
    "strip_caches_on_first_use",
    "strip_divide_without_cycle",
    "component_nodes_freed_on_restyle",
    "arrangement_without_cycle",
]


def test_every_work_around_applies_on_the_pinned_textual():
    """Each fix reports whether it applied; on the Textual this project pins, every one is needed.
    (bench/textual_upgrade.py prints the same report for the newest Textual.)"""
    report = textual_fixes.apply()
    assert report == dict.fromkeys(FIX_NAMES, textual_fixes.APPLIED)
    assert textual_fixes.report() == report
    assert textual_fixes.apply() == report  # once only


def test_a_fix_whose_bug_is_gone_says_so_and_changes_nothing():
    """What a Textual release with the bug fixed looks like: run again after the work-around is in
    place, a fix finds the bug gone, reports why, and leaves Textual alone."""
    from textual.strip import Strip
    from textual.widget import Widget

    textual_fixes.apply()
    divide, refresh = Strip.divide, Widget.refresh
    assert textual_fixes._strip_divide_without_cycle().startswith("not applied: ")
    assert textual_fixes._layout_refresh_invalidates_box_model().startswith("not applied: ")
    assert (Strip.divide, Widget.refresh) == (divide, refresh)
