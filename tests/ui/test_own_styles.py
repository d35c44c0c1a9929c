"""Moving between the chat log and the composer, and the message cursor landing on a long reply,
restyle the widget whose state changed, not the reply's whole tree (ui/widgets/own_styles.py).

Textual restyles a widget and every descendant when its focus or a class changes. With one
8,000-token reply on screen (about 1,800 Markdown widgets) each move between the log and the
composer took 1-3 s of CPU; typing after a click on a message (the keys go to the composer) waited
for it. A rule that does style descendants by that state still works: the full walk runs then."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from fake_openai import Reply, markdown_tokens
from pilot_helpers import make, one_turn, send
from textual.color import Color
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode

from tui_agent.ui.app import AgentApp
from tui_agent.ui.widgets.bubbles import AssistantBubble
from tui_agent.ui.widgets.own_styles import styles_descendants

LONG_REPLY = "".join(markdown_tokens(1500)[:-1])


def restyled(app: AgentApp) -> list[DOMNode]:
    """The nodes restyled from now on, in order (a node once per restyle that touched it)."""
    touched: list[DOMNode] = []
    update_nodes = app.stylesheet.update_nodes

    def counting(nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        touched.extend(nodes)
        update_nodes(nodes, animate=animate)

    app.stylesheet.update_nodes = counting  # type: ignore[method-assign]
    return touched


@pytest.mark.slow
async def test_the_cursor_on_a_long_reply_and_back_to_the_composer_restyle_a_few_widgets(env):
    async with one_turn(env, "a long one, please", LONG_REPLY) as (app, pilot):
        log = app.conversation_view.chat_log
        reply = log.query(AssistantBubble).last()
        assert len(list(reply.walk_children())) > 150  # a reply of many Markdown widgets
        touched = restyled(app)
        await pilot.press("up")  # the message cursor, on the newest message: the reply
        await pilot.pause()
        assert app.focused is log and log.cursor is reply
        # Drawn as before: the accent's bar over the reply's own border (an outline always there, in
        # the border's colour without the cursor: a new colour is a repaint, a new outline a layout).
        border = reply.styles.border_left
        assert reply.has_class("-cursor") and reply.styles.outline_left[0] == "thick"
        assert reply.styles.outline_left[1] != border[1] and reply.styles.background.a
        await pilot.press("x")  # a printable key goes to the composer, the cursor leaves
        await pilot.pause()
        assert app.focused is app.conversation_view.composer and log.cursor is None
        assert not reply.has_class("-cursor") and reply.styles.outline_left == border
        assert not reply.styles.background.a
        assert app.conversation_view.composer.text == "x"
        inside = set(reply.walk_children())
        # Textual's walk restyled every widget of the reply, each way; now the reply's own
        # widgets are restyled by nothing (the reply itself twice: the cursor on, then off).
        assert [node for node in touched if node in inside] == []
        assert touched.count(reply) == 2


class _FocusStylesTheReplies(AgentApp):
    CSS = "ChatLog:focus .bubble { background: red; }"


async def test_a_rule_that_styles_descendants_by_the_logs_focus_still_applies(env):
    env.fake.script(Reply(text="short"))
    app = make(env, _FocusStylesTheReplies)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(app, pilot, "hi")
        log = app.conversation_view.chat_log
        reply = log.query(AssistantBubble).last()
        red = Color.parse("red")
        assert reply.styles.background != red
        log.focus()
        await pilot.pause()
        assert reply.styles.background == red
        app.conversation_view.composer.focus()
        await pilot.pause()
        assert reply.styles.background != red


def _sheet(css: str) -> Stylesheet:
    sheet = Stylesheet()
    sheet.add_source(css, read_from=("test", ""))
    sheet.parse()
    return sheet


@pytest.mark.parametrize(
    ("css", "focus", "cursor"),
    [
        ("ChatLog:focus { background: red; }", False, False),  # the node's own state
        ("ChatLog:focus .bubble { color: red; }", True, False),
        ("ChatLog:focus > .bubble { color: red; }", True, False),
        ("Screen ChatLog:focus { color: red; }", False, False),  # focus on the last part
        (".-cursor { outline-left: thick red; }", False, False),
        (".bubble.-cursor { color: red; }", False, False),
        (".-cursor .reply { color: red; }", False, True),
        ("ChatLog .bubble.-cursor > Static { color: red; }", False, True),
        ("ChatLog:focus-within .bubble { color: red; }", False, False),  # Textual's own walk
    ],
)
def test_which_rules_style_descendants_by_an_ancestors_state(css, focus, cursor):
    sheet = _sheet(css)
    assert styles_descendants(sheet, pseudo_class="focus") is focus
    assert styles_descendants(sheet, class_name="-cursor") is cursor


async def test_the_cursor_on_any_kind_of_message_recolours_it_and_lays_nothing_out(env):
    """Every kind of message the cursor can land on (a user's message, a reply, a tool block, an
    error card) gets the same tint and bar, not outranked by the message's own style, and no edge
    comes or goes with the cursor: a border or an outline that comes or goes makes Textual lay out
    the whole log again, a new colour only repaints."""
    from pilot_helpers import running, until

    from tui_agent.core.store import history

    conversation = history.new_conversation("kinds")
    history.add_message(conversation.id, "user", "Find my note.")
    history.add_message(
        conversation.id,
        "memory_tool",
        '{"status": "ok", "rows": []}',
        tool_name="memory_sql",
        tool_call_id="c1",
        tool_arguments='{"sql": "SELECT 1"}',
    )
    history.add_message(conversation.id, "assistant", "Nothing there.")
    history.add_message(conversation.id, "error", "The server went away.")
    edges = [f"{kind}_{side}" for kind in ("border", "outline") for side in ("top", "right", "bottom", "left")]

    def present(widget: DOMNode) -> list[bool]:
        return [bool(getattr(widget.styles, edge)[0]) for edge in edges]

    async with running(env) as (app, pilot):
        log = app.conversation_view.chat_log
        await until(pilot, lambda: len(log.selectable()) == 4)
        tints = set()
        for widget in log.selectable():
            before = (present(widget), widget.styles.background)
            log.move_cursor_to(widget)
            await pilot.pause()
            assert widget.has_class("-cursor")
            assert present(widget) == before[0], type(widget).__name__
            assert widget.styles.background != before[1], type(widget).__name__
            # The same thick bar on the left of every kind: a terminal with 256 colours rounds the
            # tint away, and there the error card's red frame and the accent can look alike.
            assert widget.styles.outline_left[0] == "thick", type(widget).__name__
            tints.add(widget.styles.background)
            log.move_cursor_to(None)
            await pilot.pause()
            assert (present(widget), widget.styles.background) == before
        assert len(tints) == 1
