"""Behaviour behind the performance work: the send path does not wait for imports, the chat log
releases widgets far above the view and brings them back, very long replies stay cheap."""

from __future__ import annotations

import threading

import pytest
from fake_openai import Reply
from helpers import rows
from pilot_helpers import children, make, one_turn, running, send, settle, until
from textual.widgets import Markdown

from tui_agent.core.store import history
from tui_agent.ui import warmup
from tui_agent.ui.widgets import log_release
from tui_agent.ui.widgets.bubbles import AssistantBubble, UserBubble
from tui_agent.ui.widgets.chat_log import KEEP, PAGE, PREFETCH_AFTER_S, ChatLog, message_id_of
from tui_agent.ui.widgets.long_text import LongText

pytestmark = pytest.mark.slow


@pytest.fixture
def held_warmup(monkeypatch) -> threading.Event:
    """A fresh warm-up whose imports wait until the returned event is set (a slow machine)."""
    release = threading.Event()
    real_import = warmup._import

    def slow_import() -> None:
        release.wait(30)
        real_import()

    monkeypatch.setattr(warmup, "_thread", None)
    monkeypatch.setattr(warmup, "_done", threading.Event())
    monkeypatch.setattr(warmup, "_request_ready", threading.Event())
    monkeypatch.setattr(warmup, "_import", slow_import)
    return release


async def test_user_bubble_shows_before_the_openai_import_finishes(env, held_warmup):
    release = held_warmup
    async with running(env, "pong") as (app, pilot):
        await send(app, pilot, "ping", wait=False)
        await until(pilot, lambda: children(app, UserBubble), what="the user bubble never shown")
        assert not warmup.done()
        (bubble,) = children(app, UserBubble)
        assert bubble.text == "ping" and bubble.message_id is None
        assert env.fake.chat_requests == []  # the request waits for the import, the bubble does not
        release.set()
        await settle(app, pilot)
        (bubble,) = children(app, UserBubble)  # adopted, not mounted twice
        assert bubble.message_id is not None
        assert history.recent_messages(bubble_conversation(app), 1)[0].role == "assistant"
        assert [b.text for b in children(app, AssistantBubble)] == ["pong"]


def bubble_conversation(app) -> int:
    assert app.conversation_id is not None
    return app.conversation_id


def _long_conversation(count: int) -> int:
    conversation = history.new_conversation("long").id
    for i in range(count):
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", f"message {i} " + "lorem ipsum " * 25)
    return conversation


def _ids(app) -> list[int]:
    return [message_id_of(w) for w in app.conversation_view.chat_log.children if message_id_of(w) is not None]


async def _scroll_to(app, pilot, where: str) -> None:
    log = app.conversation_view.chat_log
    for _ in range(100):
        if where == "home":
            log.scroll_home(animate=False, immediate=True)
        else:
            log.scroll_end(animate=False, immediate=True)
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        await pilot.pause()
        if (where == "home" and not log.has_older) or (where == "end" and not log.has_newer):
            return
    raise AssertionError(
        f"never reached the {where}: {log.scroll_y} / {log.max_scroll_y}, {len(log.children)} children,"
        f" newer {log.has_newer} {log.newest_id}, settling {log._settling}, loading {log._loading}"
    )


async def test_scrolling_up_releases_the_bottom_and_scrolling_down_brings_it_back(env, monkeypatch):
    conversation = _long_conversation(10 * PAGE)
    all_ids = [m.id for m in history.recent_messages(conversation)]
    # The prefetch timer only records that it fired: a slow machine may take longer than
    # PREFETCH_AFTER_S to get here, and the first paint must be checked before the page above it.
    fired: list[ChatLog] = []
    prefetch = ChatLog._prefetch_older
    monkeypatch.setattr(ChatLog, "_prefetch_older", lambda self: fired.append(self))
    async with running(env) as (app, pilot):
        await app.conversation_view.open_conversation(conversation)
        await pilot.pause()
        first = _ids(app)  # the first paint holds what fills the view, not a whole page
        assert 2 <= len(first) < PAGE and first == all_ids[-len(first) :]
        for _ in range(100):  # the timer fires by itself, PREFETCH_AFTER_S after the paint
            if fired:
                break
            await pilot.pause(PREFETCH_AFTER_S / 5)
        assert fired == [app.conversation_view.chat_log]
        prefetch(app.conversation_view.chat_log)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _ids(app) == all_ids[-(len(first) + PAGE) :]  # a page above it follows by itself
        assert app.conversation_view.chat_log.following  # and the view stayed at the end
        await _scroll_to(app, pilot, "home")
        log = app.conversation_view.chat_log
        assert len(log.children) <= KEEP + PAGE  # never the whole conversation
        assert _ids(app)[0] == all_ids[0]
        assert log.has_newer and not log.has_older
        await _scroll_to(app, pilot, "end")
        assert _ids(app)[-1] == all_ids[-1]
        assert len(log.children) <= KEEP + PAGE
        ids = _ids(app)
        assert ids == all_ids[all_ids.index(ids[0]) :]  # contiguous: nothing lost or doubled
        assert log.has_older and not log.has_newer


async def test_a_long_sitting_releases_the_top_and_a_new_turn_still_shows(env):
    conversation = _long_conversation(10 * PAGE)
    all_ids = [m.id for m in history.recent_messages(conversation)]
    async with running(env, "still here") as (app, pilot):
        await app.conversation_view.open_conversation(conversation)
        log = app.conversation_view.chat_log
        for _ in range(5):
            await log.load_older()
        assert len(log.children) > KEEP
        log.anchor()  # back at the end, following it
        await pilot.pause()
        await log.release_far_widgets()
        await pilot.pause()
        assert len(log.children) <= KEEP
        assert log.has_older and _ids(app)[-1] == all_ids[-1]
        released_above = _ids(app)[0]
        await send(app, pilot, "are you there?")
        assert [b.text for b in children(app, AssistantBubble)][-1] == "still here"
        log.scroll_home(animate=False, immediate=True)
        await until(pilot, lambda: released_above - 1 in _ids(app), what="the released page never came back")
        await app.workers.wait_for_complete()
        ids = _ids(app)
        assert ids[0] < released_above and released_above - 1 in ids  # the released page came back
        assert ids == sorted(set(ids))


async def test_a_conversation_begun_in_the_app_gets_its_released_top_back_on_scroll(env, monkeypatch):
    """Begun on the empty view, the log waited for a "settled" that never came: once its top was
    released, scrolling up never loaded it again. The log keeps two pages here, not three, so that
    fewer turns release its top (bench/run.py's scroll and session runs use the real size)."""
    monkeypatch.setattr(log_release, "KEEP", 2 * PAGE)
    turns = PAGE + 4
    env.fake.script(*[Reply(text=f"answer {i}") for i in range(turns)])
    async with running(env) as (app, pilot):
        for i in range(turns):
            await send(app, pilot, f"question {i}")
        log = app.conversation_view.chat_log
        first_id = history.recent_messages(app.conversation_id, limit=1_000)[0].id
        log.anchor()
        await pilot.pause()
        await log.release_far_widgets()
        await pilot.pause()
        assert log.has_older and first_id not in _ids(app)
        for _ in range(200):  # a bound only for a failing test: a loaded machine loads a page per scroll
            log.scroll_home(animate=False, immediate=True)
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            if first_id in _ids(app):
                break
        assert first_id in _ids(app)
        assert _ids(app) == sorted(set(_ids(app)))


def _huge_reply(lines: int) -> list[str]:
    text = "".join(f"row {i} \x1b]0;title\x07 end\n" for i in range(lines))
    return [text[i : i + 40_000] for i in range(0, len(text), 40_000)]


async def test_a_100k_line_reply_is_windowed_plain_text_live_and_reopened(env):
    async with running(env, Reply(tokens=_huge_reply(100_000))) as (app, pilot):
        await send(app, pilot, "flood me", wait=False)
        await settle(app, pilot, timeout=120)
        (bubble,) = children(app, AssistantBubble)
        assert not bubble.query(Markdown)  # never laid out as Markdown
        (view,) = bubble.query(LongText)
        assert len(view.lines) == 100_001 and view.lines[99_999].startswith("row 99999 ")
        assert "\x1b" not in view.text and "␛]0;title␇" in view.lines[5]
        conversation = app.conversation_id
        await app.action_new_conversation()
        await app.conversation_view.open_conversation(conversation)
        await pilot.pause()
        (bubble,) = children(app, AssistantBubble)
        (view,) = bubble.query(LongText)
        assert len(view.lines) == 100_001
        strip = view.render_line(0)
        assert "row 0 ␛]0;title␇ end" in strip.text
        view.focus()
        await pilot.press("end")
        for _ in range(400):  # End scrolls there over a few frames: more of them on a loaded machine
            if view.scroll_offset.y == view.max_scroll_y:
                break
            await pilot.pause(0.05)
        assert view.scroll_offset.y == view.max_scroll_y > 99_000  # the whole reply can be seen
        app.conversation_view.composer.focus()
        await pilot.press("h", "i")
        assert app.conversation_view.composer.text == "hi"


async def test_escape_stops_a_huge_reply_while_it_streams(env):
    # The server holds the rest of the reply until the test ends: Esc lands while it streams, however
    # slowly a loaded machine handles it (the 78 chunks once all came before Esc was handled).
    rest = threading.Event()
    reply = Reply(tokens=_huge_reply(100_000), chunk_delay_s=0.05, hold=rest, hold_after_chunks=20)
    try:
        async with running(env, reply) as (app, pilot):
            await send(app, pilot, "flood me", wait=False)
            await until(
                pilot, lambda: app.conversation_view.chat_log.query(LongText), what="the reply never became long"
            )
            await pilot.press("escape")
            await settle(app, pilot)
            (bubble,) = children(app, AssistantBubble)
            assert bubble.status == "cancelled"
            assert len(bubble.query_one(LongText).lines) < 100_000
    finally:
        rest.set()


async def test_after_a_jump_to_an_old_message_newer_pages_load_on_scroll_down(env):
    conversation = _long_conversation(6 * PAGE)
    all_ids = [m.id for m in history.recent_messages(conversation)]
    async with running(env) as (app, pilot):
        await app.jump_to_message(conversation, all_ids[10])
        await pilot.pause()
        assert app.conversation_view.chat_log.has_newer and _ids(app)[-1] < all_ids[-1]
        await _scroll_to(app, pilot, "end")
        ids = _ids(app)
        assert ids[-1] == all_ids[-1] and ids == all_ids[all_ids.index(ids[0]) :]


async def test_turns_share_one_open_client_until_the_app_ends(env):
    """The app keeps one client per endpoint: no new TLS context and connection pool per turn;
    a changed endpoint gets its own, and every one is closed when the app ends."""
    async with one_turn(env, "first", "one", "two", "three") as (app, pilot):
        first = app.llm_client()
        assert first._client is not None  # still open after the turn
        await send(app, pilot, "second")
        assert app.llm_client() is first and first._client is not None
        env.profile.request_timeout_s = 7  # another setting of the same endpoint: another client
        env.profile.save()
        await send(app, pilot, "third")
        assert app.llm_client() is not first
        assert [b.text for b in children(app, AssistantBubble)] == ["one", "two", "three"]
        clients = list(app.startup.llm_clients.values())
    assert len(clients) == 2 and all(c._client is None for c in clients)  # closed with the app
    assert len(env.fake.chat_requests) == 3


async def test_a_new_bubble_does_not_restyle_the_rest_of_the_log(env):
    """Textual restyles every displayed sibling (with its subtree) on each mount when a rule with
    :first-child / :last-child could match it. No widget of the log may carry such a rule: not the
    bubbles of a long sitting (each turn would cost more than the one before), nor the blocks of a
    reply (each new block of a streaming reply would restyle all the blocks before it)."""
    # A link: Markdown, not a plain preview (drawn as one when the warm-up is not over yet).
    async with one_turn(env, "hi", "first [paragraph](https://example.org)\n\nlast paragraph") as (app, _pilot):
        order_styled = [w for w in app.conversation_view.chat_log.query("*") if w._has_order_style]
        assert order_styled == []
        (bubble,) = children(app, AssistantBubble)
        blocks = list(bubble.query_one(Markdown).children)
        assert len(blocks) == 2
        assert blocks[0].styles.margin.bottom == 1 and blocks[-1].styles.margin.bottom == 0  # the rule still works


async def test_long_lived_objects_leave_the_collector_after_the_warm_up(env, monkeypatch):
    """run_app freezes what start-up imported; once the warm-up has imported openai and the tools,
    the app freezes those too, so full collections stop walking them on every page it mounts."""
    import gc

    from tui_agent.ui import gc_tuning

    gc.unfreeze()
    try:
        monkeypatch.setenv(gc_tuning.ENV, "0")
        gc_tuning.freeze_long_lived()
        assert gc.get_freeze_count() == 0  # turned off for A/B runs
        monkeypatch.delenv(gc_tuning.ENV)
        app = make(env)
        app.freeze_gc_after_preload = True
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.startup.preload_done.is_set())
            assert app.startup.preload_done.is_set()
            assert gc.get_freeze_count() > 10_000  # the modules, classes and functions of the app and openai
    finally:
        gc.unfreeze()


async def test_the_footer_is_built_after_the_first_paint_with_every_key(env, monkeypatch):
    """The first frame reserves the footer's row; the Footer (its keys recomposed on every bindings
    change at start-up) comes right after it, showing the same keys as if it had been there."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    from tui_agent.ui.app import AgentApp

    after_paint: list[AgentApp] = []
    monkeypatch.setattr(AgentApp, "_after_first_paint", lambda self: after_paint.append(self))
    async with running(env) as (app, pilot):
        await pilot.pause()
        assert after_paint == [app]
        slot = app.query_one("#footer-slot")
        assert (slot.region.y, slot.region.height) == (39, 1)  # the row is kept: nothing moves later
        assert not app.query(Footer)
        await app.startup.mount_footer()
        await until(
            pilot,
            lambda: (
                not app.query("#footer-slot")
                and app.query(Footer)
                and app.query_one(Footer).region.y == 39
                and {"ctrl+q", "ctrl+b", "ctrl+n", "f1"} <= {key.key for key in app.query_one(Footer).query(FooterKey)}
            ),
            what="the Footer never laid out with its keys",
        )
        assert not app.query("#footer-slot")
        footer = app.query_one(Footer)
        assert footer.region.y == 39
        keys = {key.key for key in footer.query(FooterKey)}
        assert {"ctrl+q", "ctrl+b", "ctrl+n", "f1"} <= keys


async def test_a_footer_due_after_the_app_closed_does_nothing(env, monkeypatch):
    """The Footer's mount is deferred (a timer, call_later); when it comes due as the app closes,
    its screens are gone already: it does nothing instead of failing the exit (CI saw an IndexError)."""
    from tui_agent.ui.app import AgentApp

    monkeypatch.setattr(AgentApp, "_after_first_paint", lambda self: None)
    async with running(env) as (app, pilot):
        await pilot.pause()
    assert not app.screen_stack
    await app.startup.mount_footer()  # raised IndexError: list index out of range


async def test_plain_messages_open_as_one_widget_each(env):
    """Opening a conversation mounts, styles and lays out every widget of its first page: a plain
    message (text only, or a reply Markdown would draw as paragraphs) is its bubble alone, not a
    container and a child, so the page costs half the widgets."""
    conversation = history.new_conversation("plain").id
    for i in range(20):
        history.add_message(conversation, "user", f"question {i} with `code`")
        history.add_message(conversation, "assistant", f"answer {i}, **bold** and *soft*.")
    async with running(env) as (app, pilot):
        await pilot.pause()
        bubbles = list(app.conversation_view.chat_log.children)
        assert len(bubbles) >= 8
        assert list(app.conversation_view.chat_log.query("*")) == bubbles
        assert "answer 19, bold and soft." in str(bubbles[-1].render())
        assert str(bubbles[-2].render()) == "question 19 with `code`"  # as typed


async def test_the_slash_hints_are_mounted_at_the_first_slash_not_on_the_first_paint(env):
    from tui_agent.ui.widgets.composer import SlashHints

    async with running(env) as (app, pilot):
        await pilot.pause()
        assert not app.query(SlashHints)
        await pilot.press("h", "i", "backspace", "backspace")
        assert not app.query(SlashHints)  # text that is no command mounts nothing
        await pilot.press("/", "n")
        await pilot.pause()
        (hints,) = app.query(SlashHints)
        column = list(app.query_one("#chat-column").children)
        assert column.index(hints) == column.index(app.conversation_view.composer) - 1  # right above the composer
        assert hints.has_class("-visible") and hints.get_option_at_index(0).id == "new"
        await pilot.press("backspace", "i")
        await pilot.pause()
        assert list(app.query(SlashHints)) == [hints]  # the same list, filled again
        assert hints.get_option_at_index(0).id == "imagine"
        await pilot.press("escape")
        assert app.conversation_view.composer.text == ""
        await pilot.pause()
        assert not hints.has_class("-visible")


async def test_earlier_messages_are_read_on_the_first_recall_not_on_the_first_paint(env):
    """Opening the app no longer reads the conversation's last 50 messages for Ctrl+Up, nor stores
    the conversation it opened as the last one again: Ctrl+Up reads them when pressed."""
    conversation = history.new_conversation("before").id
    for text in ("older question", "newer question"):
        history.add_message(conversation, "user", text)
        history.add_message(conversation, "assistant", f"answer to {text}")
    stored = "SELECT rowid, value FROM settings WHERE key = 'last_conversation'"
    written = rows(env.vault.db_path, stored)  # INSERT OR REPLACE gives the row a new rowid
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        assert app.conversation_id == conversation
        assert app.conversation_view.composer._recall_source is not None  # not read yet
        await pilot.press("ctrl+up")
        assert app.conversation_view.composer.text == "newer question"
        await pilot.press("ctrl+up")
        assert app.conversation_view.composer.text == "older question"
    assert rows(env.vault.db_path, stored) == written == [(written[0][0], str(conversation))]


async def test_the_screen_is_not_laid_out_again_at_the_size_it_has_but_a_resize_still_is(env, monkeypatch):
    """Textual sent the screen a Resize after each layout that showed it, each one a full layout at
    the same size (three before the first paint). A real resize must still lay everything out."""
    from textual.screen import Screen

    resized: list[tuple[int, int]] = []
    original = Screen._screen_resized

    def counting(self: Screen, size) -> None:  # type: ignore[no-untyped-def]
        resized.append(tuple(size))
        original(self, size)

    monkeypatch.setattr(Screen, "_screen_resized", counting)
    conversation = history.new_conversation("sized").id
    for i in range(6):
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", f"message {i} " * 30)
    async with running(env) as (app, pilot):
        await settle(app, pilot)
        assert resized.count((120, 40)) == 1, resized
        wide = app.conversation_view.chat_log.children[-1].size
        await pilot.resize_terminal(80, 30)
        await settle(app, pilot)
        narrow = app.conversation_view.chat_log.children[-1].size
        assert (80, 30) in resized
        assert narrow.width < wide.width and narrow.height > wide.height  # re-wrapped: more lines
        assert app.conversation_view.composer.region.bottom <= 30


async def test_a_long_last_paragraph_is_written_less_often_so_a_long_reply_costs_linear_time(env):
    """Markdown parses and wraps the reply's last block again at each write: while that block is
    long, writes come less often in proportion (at least one a second); short blocks, and replies
    shown as windowed plain text, are written every frame."""
    from tui_agent.ui import turn_view

    app = make(env)
    async with app.run_test(size=(120, 40)):
        view = turn_view.TurnView(app.conversation_view, None)
        view.bubble = AssistantBubble("")
        assert view._frame_s() == turn_view.FRAME_S
        view.bubble._parts.append("word " * 2_000 + "\n\n" + "word " * 1_000)  # the last block: 5,000
        assert view._frame_s() == turn_view.FRAME_S
        view.bubble._parts.append("word " * 17_000)  # the last block: 90,000 characters
        assert view._frame_s() == turn_view.FRAME_S * 90_000 / turn_view.BLOCK_CHARS_PER_FRAME
        view.bubble._parts.append("word " * 1_000_000)
        assert view._frame_s() == turn_view.MAX_FRAME_S
        view.bubble._long = LongText("")  # past the Markdown limit: a constant cost a write
        assert view._frame_s() == turn_view.FRAME_S


async def test_opening_a_conversation_again_cancels_the_page_load_the_first_opening_planned(env, monkeypatch):
    """Each opening plans to load the page above half a second after its paint; opened again (at
    start-up and then by the user, or two quick switches), only the last opening's load runs.

    Each planned load is told by its own timer, and it ran as planned only if it was still the log's
    planned load when it ran (a late settle of an opening may plan the load again: harmless). A
    timer that fired has its call queued already, and stopping it then does not take that back: the
    log's plan number makes such a call do nothing. The
    second opening must come before the first one's load is due; on a machine too loaded for that
    (loaded run 171: over 3 s) the first load ran as planned, and the case is tried again with a
    longer wait."""
    from tui_agent.ui.widgets import chat_log as chat_log_module

    conversation = _long_conversation(3 * PAGE)
    fired: list[tuple[object, bool]] = []  # each planned load that ran: (its timer, still the plan)
    running_timer: list[object] = [None]  # the planned load's timer whose call is running
    monkeypatch.setattr(  # the page load itself: not here
        ChatLog, "_prefetch_older", lambda self: fired.append((running_timer[0], self._prefetch is running_timer[0]))
    )
    async with running(env) as (app, pilot):
        chat_log = app.conversation_view.chat_log
        set_timer = chat_log.set_timer

        def told_apart(delay, callback=None, **options):
            if getattr(callback, "func", None) != chat_log._prefetch_due:
                return set_timer(delay, callback, **options)

            def ran() -> None:
                running_timer[0] = timer
                callback()

            timer = set_timer(delay, ran, **options)
            return timer

        monkeypatch.setattr(chat_log, "set_timer", told_apart)
        for delay in (3.0, 10.0, 30.0):
            monkeypatch.setattr(chat_log_module, "PREFETCH_AFTER_S", delay)
            fired.clear()
            await app.conversation_view.open_conversation(conversation)
            await until(pilot, lambda: chat_log._prefetch is not None, what="the first opening planned no load")
            first = chat_log._prefetch
            await app.conversation_view.open_conversation(conversation)
            await until(
                pilot, lambda f=first: chat_log._prefetch not in (None, f), what="the second opening planned none"
            )
            if (first, True) not in fired:
                break  # the second opening came in time: the first one's load was still to come
        # The last opening's load runs; then a timer due after any load planned before it.
        await until(pilot, lambda: fired, delay + 30, "the last opening's load never ran")
        after: list[bool] = []
        chat_log.set_timer(delay, lambda: after.append(True))
        await until(pilot, lambda: after, delay + 30, "the timer after the planned loads never ran")
        assert all(as_planned for _, as_planned in fired), fired  # no load ran after it was replaced
        assert first not in [timer for timer, _ in fired], fired  # the first opening's load never ran


@pytest.mark.parametrize("words", [True, False])
async def test_the_footer_comes_after_the_first_words_of_a_message_sent_at_once(env, held_warmup, words):
    """Sent before the client is ready, the reply's first words go first (the Footer's keys cost
    a layout of their own); the Footer follows them, and always comes, words or not."""
    from textual.widgets import Footer

    release = held_warmup
    first = Reply(text="first words") if words else Reply(tool_calls=[("show_image", '{"path": "media/none.png"}')])
    async with running(env, first, "and then") as (app, pilot):
        try:
            await send(app, pilot, "at once", wait=False)
            await pilot.pause(0.2)
            assert not app.query(Footer)  # the client is not ready: the turn waits, so does the Footer
        finally:
            release.set()
        await settle(app, pilot)
        await until(
            pilot, lambda: app.query(Footer) and app.query_one(Footer).region.y == 39, what="no Footer on row 39"
        )
        assert app.query_one(Footer).region.y == 39
