"""Replies from history without the Markdown widget, where it would draw them exactly the same;
the others are Markdown from the first paint."""

from __future__ import annotations

import time

import pytest
from pilot_helpers import running, settle, until
from textual.app import App, ComposeResult
from textual.widgets import Markdown

from tui_agent.core.store import history
from tui_agent.ui.app import AgentApp
from tui_agent.ui.paths import styles_dir
from tui_agent.ui.reply_preview import ReplyPreview, preview
from tui_agent.ui.widgets.bubbles import AssistantBubble

EXACT = [
    "Here you go.",
    "message 1: **lorem** ipsum `dolor` sit amet, consectetur adipiscing elit " * 4,
    "First paragraph with *emphasis* and **strong words**.\n\nSecond one, `code with  two spaces`, end.",
    "Lines of one\nparagraph are    joined\n  with single spaces (as Markdown does).",
    '(**bold in brackets**) and "*quoted emphasis*"; `a*b` keeps its star in code',
    "Trailing space at the end of a line \nis not a hard break.",
    "Numbers 3 and 4, question? Yes: fine. Smileys :) and (parentheses).",
]

NOT_EXACT = [
    "# A heading",
    "- a list\n- of items",
    "1. numbered",
    "See [the docs](https://example.org).",
    "Visit https://example.org or example.org",
    "HTML <b>bold</b> &amp; entities",
    "A hard  \nbreak",
    "```python\nprint(1)\n```",
    "    indented code",
    "> a quote",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "snake_case_name and ~~strike~~",
    "*a **nested** one*",
    "2*3*4 is intraword",
    "unpaired **bold",
    "escaped \\*star\\*",
    "Setext\n===",
    "e.g. file.py",
]


@pytest.mark.parametrize("text", EXACT)
def test_plain_paragraphs_are_exact(text):
    assert preview(text)[1]


@pytest.mark.parametrize("text", NOT_EXACT)
def test_anything_else_is_left_to_markdown(text):
    content, exact = preview(text)
    assert not exact
    assert content.plain == text.strip()  # drawn as it is written until Markdown takes over


class Side(App[None]):
    CSS_PATH = str(styles_dir() / "app.tcss")  # the bubbles' real styles

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield AssistantBubble(self.text, preview=True)
        yield AssistantBubble(self.text)


def cells(app, region) -> list[list[tuple[str, object, object, bool, bool]]]:
    """What the screen shows in the region: text, colours, bold, italic."""
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    return [
        [
            (segment.text, segment.style.color, segment.style.bgcolor, segment.style.bold, segment.style.italic)
            for segment in strip.crop(region.x, region.right).simplify()
        ]
        for strip in strips
    ]


@pytest.mark.parametrize("text", EXACT)
async def test_an_exact_preview_draws_what_markdown_draws(text):
    app = Side(text)
    async with app.run_test(size=(70, 30)) as pilot:

        def drawn_alike() -> bool:  # both laid out and drawn (a loaded machine draws them later)
            with_preview, with_markdown = app.query(AssistantBubble)
            if not (markdown := with_markdown.query(".reply")):
                return False
            shown, markdown = with_preview.content_region, markdown.first(Markdown)
            return shown.size == markdown.size and shown.height > 0 and cells(app, shown) == cells(app, markdown.region)

        await until(pilot, drawn_alike, what="the preview never drew what Markdown draws")
        with_preview, with_markdown = app.query(AssistantBubble)
        assert not with_preview.children  # the bubble draws the text itself: one widget
        markdown = with_markdown.query_one(".reply", Markdown)
        shown = with_preview.content_region
        assert shown.size == markdown.size and shown.height > 0
        assert cells(app, shown) == cells(app, markdown.region)


async def test_a_reply_that_needs_markdown_is_markdown_from_the_first_paint(env, monkeypatch):
    """Never its raw text first: converted after the paint, headings, fences and tables showed as
    typed for a second and the log jumped once per reply."""
    conversation = history.new_conversation("md").id
    history.add_message(conversation, "user", "show me")
    history.add_message(conversation, "assistant", "# Title\n\n- one\n- two")
    history.add_message(conversation, "user", "and plain?")
    history.add_message(conversation, "assistant", "Plain **words** only.")
    at_paint: list[list[str]] = []
    original = AgentApp._after_first_paint

    def after_first_paint(self: AgentApp) -> None:
        at_paint.append([type(reply).__name__ for reply in self.query(".reply")])
        original(self)

    monkeypatch.setattr(AgentApp, "_after_first_paint", after_first_paint)
    async with running(env, size=(100, 30)) as (app, pilot):
        await settle(app, pilot)
        assert at_paint == [["ReplyMarkdown"]]  # the plain reply is drawn by its bubble, no child
        rich, plain = app.query(AssistantBubble)
        assert not rich.query(ReplyPreview) and rich.query_one(".reply", Markdown)
        assert len(rich.query("MarkdownH1")) == 1 and len(rich.query("MarkdownBulletList")) == 1
        assert not plain.children and plain.text == "Plain **words** only."
        assert "Plain words only." in str(plain.render())


async def test_upgrading_keeps_the_status_under_the_reply(env):
    conversation = history.new_conversation("cut").id
    history.add_message(conversation, "user", "q")
    history.add_message(conversation, "assistant", "- partial list", status="cancelled")
    async with running(env, size=(100, 30)) as (app, pilot):
        await settle(app, pilot)
        (bubble,) = app.query(AssistantBubble)
        names = [type(child).__name__ for child in bubble.children]
        assert names == ["ReplyMarkdown", "Static"]
        assert "(cancelled)" in str(bubble.query_one(".reply-status").render())


class Live(App[None]):
    """A live reply (as the turn mounts it) beside a finished one with the same text."""

    CSS_PATH = str(styles_dir() / "app.tcss")
    clock = staticmethod(time.monotonic)  # the spinner's

    def compose(self) -> ComposeResult:
        yield AssistantBubble(thinking=True)
        yield AssistantBubble()  # the reference: Markdown from the start


async def test_the_first_words_show_before_markdown_is_imported(monkeypatch):
    """Sent right after start-up, the reply's first words are drawn while the warm-up still imports
    Markdown: as a preview while that draws exactly what Markdown would, then as Markdown, holding
    every word once."""
    from tui_agent.ui.widgets import bubbles

    ready = False
    monkeypatch.setattr(bubbles, "markdown_ready", lambda: ready)
    app = Live()
    async with app.run_test(size=(70, 30)) as pilot:
        live, reference = app.query(AssistantBubble)
        words = ["Here ", "are ", "**the** ", "first `words`."]
        for word in words:
            await live.write(word)
            await reference.write(word)
        await until(
            pilot,
            lambda: (
                live.query(".reply")
                and not live.query(".thinking")
                and cells(app, live.query_one(".reply").region)
                == cells(app, reference.query_one(".reply", Markdown).region)
            ),
            what="the preview never drew what Markdown draws",
        )
        shown = live.query_one(".reply")
        assert isinstance(shown, ReplyPreview) and not live.query(Markdown)
        assert not live.query(".thinking")  # the spinner went with the first words
        assert cells(app, shown.region) == cells(app, reference.query_one(".reply", Markdown).region)

        await live.write("\n\n- then a list")  # not something a preview draws exactly: Markdown now
        assert not live.query(ReplyPreview)
        await live.write(" item")
        await until(pilot, lambda: live.query("MarkdownBulletList"), what="the list never drawn")
        assert live.query_one(".reply", Markdown).source == "Here are **the** first `words`.\n\n- then a list item"
        assert len(live.query("MarkdownBulletList")) == 1


async def test_a_preview_becomes_markdown_once_it_is_imported(monkeypatch):
    from tui_agent.ui.widgets import bubbles

    ready = False
    monkeypatch.setattr(bubbles, "markdown_ready", lambda: ready)
    app = Live()
    async with app.run_test(size=(70, 30)) as pilot:
        live = app.query(AssistantBubble).first()
        await live.write("plain start")
        assert live.query(ReplyPreview)
        ready = True
        await live.write(", then more")
        await live.write(" and the end.")
        await until(
            pilot,
            lambda: not live.query(ReplyPreview) and live.query(Markdown),
            what="the preview never became Markdown",
        )
        assert not live.query(ReplyPreview)
        assert live.query_one(".reply", Markdown).source == "plain start, then more and the end."


class Finished(App[None]):
    """A reply from history, drawn by its bubble alone."""

    CSS_PATH = str(styles_dir() / "app.tcss")

    def compose(self) -> ComposeResult:
        yield AssistantBubble("Plain **words** only, and `code`.", preview=True, message_id=7)


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("joins", ["alternatives", "status", "markdown"])
async def test_a_reply_drawn_alone_moves_its_text_into_a_child_when_something_joins_it(joins):
    """Alternatives, a status or Markdown mounted in a bubble that drew its own text: the text is
    drawn once, by a child, as it was, with the newcomer in its place."""
    app = Finished()
    async with app.run_test(size=(70, 20)) as pilot:
        bubble = app.query_one(AssistantBubble)
        assert not bubble.children
        before = cells(app, bubble.content_region)
        if joins == "alternatives":
            await bubble.show_alternatives([7, 9])
        elif joins == "status":
            await bubble.finish("cancelled")
        else:
            await bubble.upgrade()
        await until(
            pilot,
            lambda: bubble.query(".reply") and cells(app, bubble.query_one(".reply").region) == before,
            what="the text never drawn by the child as it was",
        )
        reply = bubble.query_one(".reply")
        assert cells(app, reply.region) == before
        assert screen_text(app).count("Plain words only") == 1
        assert not str(bubble.render()).strip()  # the bubble's own text is gone
        expected = {
            "alternatives": ["AlternativesBar", "ReplyPreview"],
            "status": ["ReplyPreview", "Static"],
            "markdown": ["ReplyMarkdown"],
        }
        assert [type(child).__name__ for child in bubble.children] == expected[joins]
