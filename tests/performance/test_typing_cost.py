"""A key typed while a long reply is on screen (or streaming) costs the same as with an empty log:
what runs on each key asks about the composer's own neighbours, never walks the whole screen. The
slash hints were looked up with a query over every widget under the conversation: 8,000 tokens of
Markdown are a few thousand widgets, walked at every key."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai import markdown_tokens
from pilot_helpers import make, send, steady_screen, until
from textual import events
from textual.css import query as query_module

from tui_agent.ui.widgets.bubbles import AssistantBubble

pytestmark = pytest.mark.slow


async def _nodes_matched_per_key(env, monkeypatch, reply_tokens: int) -> float:
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "hi")
        if reply_tokens:
            bubble = AssistantBubble("".join(markdown_tokens(reply_tokens)))
            await app.conversation_view.chat_log.mount(bubble)
        await steady_screen(app, pilot)  # the reply laid out before the keys are counted
        matched = 0
        real_match = query_module.match

        def counting(selector_sets, node):
            nonlocal matched
            matched += 1
            return real_match(selector_sets, node)

        monkeypatch.setattr(query_module, "match", counting)
        app.conversation_view.composer.focus()
        for key in "typing":
            await pilot.press(key)
        await pilot.pause()
        monkeypatch.setattr(query_module, "match", real_match)
        assert app.conversation_view.composer.text.endswith("typing")
        return matched / len("typing")


async def test_a_key_walks_no_more_widgets_with_a_long_reply_on_screen(env, monkeypatch):
    empty = await _nodes_matched_per_key(env, monkeypatch, 0)
    long = await _nodes_matched_per_key(env, monkeypatch, 3_000)
    assert long <= empty + 5, (empty, long)


async def test_a_key_typed_while_a_layout_is_due_is_drawn_before_that_layout(env, monkeypatch):
    """A streamed write asks for a layout of the screen (100-150 ms with its frame while a long
    reply streams). A key typed meanwhile is drawn first, alone, where the composer is: no layout
    runs between the key changing the composer and the frame that shows it. Textual's update drew
    the key in the frame after that layout."""
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "hi")
        bubble = AssistantBubble("".join(markdown_tokens(1_500)))
        view = app.conversation_view
        await view.chat_log.mount(bubble)
        await steady_screen(app, pilot)  # the reply laid out before the keys are watched
        view.composer.focus()
        await pilot.pause()
        screen = app.screen
        events: list[tuple[str, str]] = []
        real_layout, real_frame = type(screen)._refresh_layout, type(screen)._compositor_refresh

        def layout(self, *args, **kwargs):
            events.append(("layout", view.composer.text))
            return real_layout(self, *args, **kwargs)

        def frame(self):
            events.append(("frame", view.composer.text))
            return real_frame(self)

        monkeypatch.setattr(type(screen), "_refresh_layout", layout)
        monkeypatch.setattr(type(screen), "_compositor_refresh", frame)
        for key in "abc":
            view.chat_log.refresh(layout=True)  # as a streamed write does
            await bubble.write(" more words")
            await pilot.press(key)
            await pilot.pause()
            typed = view.composer.text
            assert typed.endswith(key)
            first_frame = events.index(("frame", typed))
            assert ("layout", typed) not in events[:first_frame], events
        assert any(kind == "layout" for kind, _ in events)  # the layouts asked for still ran
        # A key that changes the composer's size (a new line) is placed by the layout first.
        events.clear()
        height = view.composer.size.height
        await pilot.press("shift+enter")
        await pilot.pause()
        grown = view.composer.text
        assert grown.endswith("\n") and view.composer.size.height == height + 1
        assert events.index(("layout", grown)) < events.index(("frame", grown)), events


async def test_a_key_typed_while_a_streamed_write_holds_a_batch_is_drawn_at_once(env):
    """A streamed write holds a batch (no frame) across the awaits of its parse and mounts
    (``Markdown.append``); a key handled meanwhile is drawn then, the composer's cells alone,
    and what the batch is changing is drawn only when it ends. The key waited for the batch's
    end and the next update."""
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "hi")
        view = app.conversation_view
        bubble = AssistantBubble("".join(markdown_tokens(300)))
        await view.chat_log.mount(bubble)
        view.composer.focus()
        await steady_screen(app, pilot)  # the reply laid out before the writes are watched
        driver = app._driver
        assert driver is not None
        written: list[str] = []
        type(driver).is_headless = property(lambda self: False)  # the headless driver writes nothing
        try:
            driver.write = written.append
            with app.batch_update():
                await bubble.write(" BATCHEDWORDS")
                for key in "zqj":
                    await pilot.press(key)
                await pilot.pause()
                assert view.composer.text.endswith("zqj")
                shown = "".join(written)
                assert "zqj" in shown  # drawn inside the batch
                assert "BATCHEDWORDS" not in shown  # the write the batch holds, not yet
            await until(pilot, lambda: "BATCHEDWORDS" in "".join(written), what="the batched write never drawn")
            assert "BATCHEDWORDS" in "".join(written)  # drawn once the batch ended
        finally:
            del type(driver).is_headless


async def _turns_until_typed(app, *posted: events.Event) -> int:
    """Post ``posted`` to the app as its driver does, at one go; the turns of the event loop until
    the composer's text changed."""
    composer = app.conversation_view.composer
    before = composer.text
    for event in posted:
        app.post_message(event)
    for turn in range(1, 100):
        await asyncio.sleep(0)
        if composer.text != before:
            return turn
    raise AssertionError(f"not typed: {posted}")


async def test_a_key_for_the_composer_reaches_it_at_the_next_turn_and_in_order(env):
    """A key posted to the app while the composer has the focus is in the composer's hands at the
    next turn of the event loop (ui/input_turn.py), not after the app's own turn (each turn runs
    whatever else is ready first: while a reply streams, a write's parse, mounts, a layout). Keys
    stay in order with each other and with what the terminal sent before them."""
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        composer = app.conversation_view.composer
        composer.focus()
        await pilot.pause()
        for key in "abc":
            await pilot.pause()
            assert await _turns_until_typed(app, events.Key(key, key)) == 1
        assert composer.text == "abc"
        # Editing keys go the same way, so a fast typist's corrections land where they were typed.
        await pilot.pause()
        await _turns_until_typed(app, events.Key("backspace", None), events.Key("x", "x"))
        await pilot.pause()
        assert composer.text == "abx"
        # A paste waits in the app's queue: the keys after it wait behind it, not ahead.
        await _turns_until_typed(app, events.Paste("P"), events.Key("y", "y"), events.Key("z", "z"))
        await pilot.pause()
        assert composer.text == "abxPyz"
        # Focus elsewhere: the app's own way (typing in the chat log still reaches the composer).
        app.conversation_view.chat_log.focus()
        await pilot.pause()
        await _turns_until_typed(app, events.Key("q", "q"))
        await pilot.pause()
        assert composer.text == "abxPyzq" and app.focused is composer


async def test_keys_from_the_drivers_thread_reach_the_composer_in_order(env):
    """The app's driver (``one_turn`` around the one Textual chose) posts from its input thread,
    where no Textual context is set: every key gets to the composer, in the order sent, editing
    keys included (the shortcut to the composer runs in that callback)."""
    import threading

    from textual.drivers.headless_driver import HeadlessDriver

    from tui_agent.ui.input_turn import one_turn

    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        composer = app.conversation_view.composer
        composer.focus()
        await pilot.pause()
        driver = one_turn(HeadlessDriver)(app)
        await asyncio.sleep(0.2)
        # A typo, then fixed as a user would (each key its own event, as the terminal sends them).
        keys = [(c, c) for c in "hello wrld"] + [("left", None)] * 3 + [("o", "o"), ("end", None), ("!", "!")]

        def type_from_a_thread() -> None:
            for key, character in keys:
                driver.send_message(events.Key(key, character))

        thread = threading.Thread(target=type_from_a_thread)
        thread.start()
        thread.join()
        await until(pilot, lambda: composer.text == "hello world!", timeout=30)
