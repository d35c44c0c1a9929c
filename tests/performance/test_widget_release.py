"""Widgets the chat log releases for good are freed by reference counting, not left as reference
cycles for the next full collection (which, ~200 scrolled messages' worth at once, stalled PageUp)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from pilot_helpers import running, until
from test_perf_ui import _long_conversation
from textual.widget import Widget

from tui_agent.core.store import history
from tui_agent.ui import gc_tuning
from tui_agent.ui.widgets.chat_log import KEEP, PAGE, message_id_of


@pytest.fixture
def young_collections_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No full collection runs while the test runs, neither the collector's own nor the app's idle
    one: the young ones do (they free the short-lived cycles Textual makes while it lays out and
    draws, which can point at a widget)."""
    monkeypatch.setenv(gc_tuning.IDLE_ENV, "0")
    was = gc.get_threshold()
    gc.set_threshold(was[0], was[1], 10**9)
    yield
    gc.set_threshold(*was)


def _promote() -> None:
    """Whatever is alive now becomes old: only a full collection would free it if it is a cycle."""
    gc.collect()


async def _alive_after_young_collections(pilot, refs: list[weakref.ref[Widget]]) -> int:
    """How many are still alive a moment after their release (each removed widget's own message
    task ends a little after its removal, and holds it until then)."""
    for _ in range(20):
        await pilot.pause(0.05)
        gc.collect(1)
        alive = sum(ref() is not None for ref in refs)
        if alive <= len(refs) // 4:
            break
    return alive


def _refs(widgets: list[Widget]) -> list[weakref.ref[Widget]]:
    return [weakref.ref(node) for widget in widgets for node in widget.walk_children(with_self=True)]


async def _page_up_until_released(app, pilot, first: set[int]) -> None:
    """PageUp until the page first shown is released, then two pages more: Textual's arrangement
    cache holds the last few layouts of the log (and their widgets) until newer ones replace them."""
    log = app.conversation_view.chat_log
    loads_after = None
    for _ in range(200):
        log.scroll_page_up(animate=False)
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        if loads_after is None and not first & {id(child) for child in log.children} and len(log.children) <= KEEP:
            loads_after = {log.oldest_id}
        elif loads_after is not None:
            loads_after.add(log.oldest_id)
            if len(loads_after) > 5 or not log.has_older:
                return
    raise AssertionError("scrolling up never released the newest page, or never loaded more after it")


@pytest.mark.slow
async def test_a_page_released_by_scrolling_is_freed_without_a_full_collection(env, young_collections_only):
    history.remember_conversation(_long_conversation(300))
    async with running(env) as (app, pilot):
        await pilot.pause(1.0)
        newest = list(app.conversation_view.chat_log.children)
        refs = _refs(newest)
        _promote()
        await _page_up_until_released(app, pilot, {id(w) for w in newest})
        del newest
        alive = await _alive_after_young_collections(pilot, refs)
        # Without the unlinking every one of them lives on: a widget and its styles point at each other.
        assert alive <= len(refs) // 4, f"{alive} of {len(refs)} released widgets still alive"


@pytest.mark.slow
async def test_switching_conversations_frees_the_one_shown_before(env, young_collections_only):
    first = _long_conversation(60)
    second = history.new_conversation("other").id
    history.add_message(second, "user", "hello")
    history.remember_conversation(first)
    async with running(env) as (app, pilot):
        await pilot.pause(1.0)
        await until(pilot, lambda: app.conversation_view.chat_log.children, what="the conversation never shown")
        refs = _refs(list(app.conversation_view.chat_log.children))
        assert refs
        _promote()
        await app.conversation_view.chat_log.show_conversation(second)
        await until(
            pilot,
            lambda: [w.text for w in app.conversation_view.chat_log.children if hasattr(w, "text")] == ["hello"],
            what="the second conversation never shown",
        )
        assert [w.text for w in app.conversation_view.chat_log.children if hasattr(w, "text")] == ["hello"]
        alive = await _alive_after_young_collections(pilot, refs)
        assert alive <= len(refs) // 4, f"{alive} of {len(refs)} widgets of the last conversation alive"


def test_the_unlinking_can_be_turned_off_and_styles_without_a_node_still_answer(monkeypatch):
    from textual.widgets import Static

    widget = Static("x")
    widget.styles.width = 10
    nodes = gc_tuning.nodes_to_unlink([widget])
    assert nodes == [widget]
    gc_tuning.unlink_removed(nodes)
    assert widget.styles.base.node is None
    widget.styles.width = 12  # a style set afterwards (a late callback) refreshes nothing and does not fail
    assert widget.styles.width is not None and widget.styles.width.value == 12
    monkeypatch.setenv(gc_tuning.UNLINK_ENV, "0")
    other = Static("y")
    assert gc_tuning.nodes_to_unlink([other]) == [] and other.styles.base.node is other


def _open_long_conversation() -> list[int]:
    """Ten pages, the one the app opens; their ids, oldest first."""
    conversation = _long_conversation(10 * PAGE)
    history.remember_conversation(conversation)
    return [m.id for m in history.recent_messages(conversation)]


@pytest.mark.slow
async def test_a_card_below_does_not_keep_the_whole_conversation_mounted_and_comes_back(env):
    """A card after the last message (the endpoint set-up card, /help) is not a stored message: the
    log would not release anything below it, so scrolling up a long conversation mounted all of it.
    It is set aside with the page it was on and shown again, after the same message."""
    from test_perf_ui import _ids, _scroll_to

    from tui_agent.ui.widgets.bubbles import NoticeCard

    all_ids = _open_long_conversation()
    async with running(env) as (app, pilot):
        await pilot.pause(1.0)
        log = app.conversation_view.chat_log
        await log.mount(NoticeCard("a card after the last message", classes="setup-card"))
        await _scroll_to(app, pilot, "home")
        assert _ids(app)[0] == all_ids[0]
        assert len(log.children) <= KEEP + PAGE  # released below the view, card and all
        assert not log.query(NoticeCard)
        await _scroll_to(app, pilot, "end")
        assert _ids(app)[-1] == all_ids[-1]
        (card,) = log.query(NoticeCard)
        assert log.children[-1] is card and card.has_class("setup-card")
        assert "a card after the last message" in str(card.render())
        assert message_id_of(log.children[-2]) == all_ids[-1]


@pytest.mark.slow
async def test_the_window_marker_comes_back_with_its_page(env):
    from test_perf_ui import _scroll_to

    from tui_agent.ui.widgets.log_release import is_marker

    all_ids = _open_long_conversation()
    async with running(env) as (app, pilot):
        await pilot.pause(1.0)
        log = app.conversation_view.chat_log
        first_seen = all_ids[-5]  # the model sees the last five messages
        await log.mark_window_start(first_seen)

        def marked_before() -> int | None:
            children = list(log.children)
            markers = [i for i, child in enumerate(children) if is_marker(child)]
            assert len(markers) <= 1
            return message_id_of(children[markers[0] + 1]) if markers else None

        assert marked_before() == first_seen
        await _scroll_to(app, pilot, "home")
        assert marked_before() is None  # its page was released
        await _scroll_to(app, pilot, "end")
        assert marked_before() == first_seen
