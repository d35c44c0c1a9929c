"""Every private name of another package the code touches, proved to exist and to do what the code
relies on (the public API is used wherever there is one). Each test says what breaks when it fails:
a new release of that package renamed or changed the name, and the code named must follow.

Touches proved elsewhere: Textual's internals patched by ui/textual_fixes.py
(tests/ui/test_textual_fixes.py: each fix reports whether it applied), the Linux driver's output file
wrapped by ui/lifeline.py (tests/terminals/test_lifeline.py), peewee's driver names (tests/store/test_store_driver.py),
openai's package layout read by core/openai_import.py (tests/providers/test_openai_import.py), textual-image
(tests/images/test_textual_image_contract.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from textual import events
from textual.app import App, ComposeResult
from textual.driver import Driver
from textual.geometry import Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static, TextArea

# --- Textual ---------------------------------------------------------------------------------


async def test_app_driver_is_the_running_apps_driver_with_write_and_flush():
    """``App._driver``: ui/app.py's copy_to_clipboard writes OSC 52 through it, ui/kitty_widget.py
    deletes a kitty placement through it. Textual has no public handle on the driver (its own
    copy_to_clipboard uses this one). If this fails, copying to the terminal's clipboard and
    removing kitty pictures break."""
    app = App()
    assert app._driver is None  # not running yet: both callers check for None
    async with app.run_test():
        driver = app._driver
        assert isinstance(driver, Driver)
        assert callable(driver.write) and callable(driver.flush)
        driver.write("")  # what the callers do
        driver.flush()


class _Stops(TextArea):
    async def _on_key(self, event: events.Key) -> None:
        if event.key in ("x", "enter"):
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)


class _Editor(App[None]):
    def compose(self) -> ComposeResult:
        yield _Stops()


async def test_text_area_handles_typed_keys_in_its_private_on_key():
    """``TextArea._on_key``: ui/widgets/composer.py overrides it to take Enter (send), Shift+Enter,
    Tab, PageUp/PageDown and the recall keys before the editor inserts or moves. If this fails,
    Enter inserts a new line instead of sending, and the composer's keys stop working."""
    assert "_on_key" in vars(TextArea) and inspect.iscoroutinefunction(TextArea._on_key)
    app = _Editor()
    async with app.run_test() as pilot:
        editor = app.query_one(_Stops)
        editor.focus()
        await pilot.press("x", "enter", "y")
        await pilot.pause()
        assert editor.text == "y"  # the override saw x and Enter first; y went on to TextArea


class _Recording(Screen[None]):
    def __init__(self) -> None:
        super().__init__()
        self.layouts: list[tuple[Size | None, bool]] = []
        self.resizes: list[Size] = []
        self.partial: list[bool] = []

    def compose(self) -> ComposeResult:
        yield Static("text " * 40)

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        self.partial.append(scroll and not self._layout_widgets)
        self.layouts.append((size, scroll))
        super()._refresh_layout(size, scroll)

    def _screen_resized(self, size: Size) -> None:
        self.resizes.append(size)
        super()._screen_resized(size)


class _Sized(App[None]):
    def on_mount(self) -> None:
        self.push_screen(_Recording())


async def test_screen_lays_out_through_refresh_layout_and_hears_resizes_in_screen_resized():
    """``Screen._refresh_layout(size, scroll)``, ``Screen._layout_widgets`` and
    ``Screen._screen_resized(size)``: ui/chat_screen.py skips the full layouts Textual repeats at
    the same size (three before the first paint). If this fails, ChatScreen's override is never
    called (the first paint is slow again) or calls Textual with arguments it no longer takes."""
    signature = inspect.signature(Screen._refresh_layout)
    assert list(signature.parameters)[1:] == ["size", "scroll"]
    assert list(inspect.signature(Screen._screen_resized).parameters)[1:] == ["size"]
    app = _Sized()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, _Recording)
        assert screen.layouts and all(isinstance(p, bool) for p in screen.partial)
        assert isinstance(screen._layout_widgets, dict)
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        assert Size(60, 20) in screen.resizes
        assert screen.size == Size(60, 20)


class _Two(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("one", id="one")
        yield Static("two", id="two")


async def test_screen_updates_draw_dirty_widgets_through_its_compositor():
    """``Screen._on_timer_update()``, ``_layout_required``, ``_layout_widgets``, ``_dirty_widgets``,
    ``_update_timer``, ``_compositor.update_widgets(widgets)``, ``_compositor_refresh()`` and
    ``App._batch_count``: ui/chat_screen.py draws a typed key in the composer alone before a layout
    due for the rest of the screen (tests/performance/test_typing_cost.py shows the order). If
    this fails, a key typed while a reply streams waits for that layout again, or the override
    calls Textual with names it no longer has."""
    assert list(inspect.signature(Screen._on_timer_update).parameters) == ["self"]
    assert list(inspect.signature(Screen._compositor_refresh).parameters) == ["self"]
    app = _Two()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert app._batch_count == 0 and screen._layout_required is False
        assert isinstance(screen._dirty_widgets, set) and isinstance(screen._layout_widgets, dict)
        assert callable(screen._update_timer.resume)
        one, two = app.query_one("#one", Static), app.query_one("#two", Static)
        drawn: list[str] = []

        def display(_screen: Screen, update: Any) -> None:  # the headless driver writes nothing
            drawn.append(update.render_segments(app.console))

        app._display = display  # type: ignore[method-assign]
        one.update("ONE")
        screen._dirty_widgets.update({one, two})
        screen._compositor.update_widgets({one})
        screen._compositor_refresh()  # draws what update_widgets was given, and forgets every dirty widget
        assert "ONE" in "".join(drawn) and "two" not in "".join(drawn)
        assert screen._dirty_widgets == set()


async def test_the_app_draws_nothing_while_a_batch_is_held():
    """``App._batch_count``: ui/chat_screen.py's ``draw_typed`` sets it to 0 while it draws the
    composer alone during a batch (a streamed write holds one across its awaits), then puts it
    back. If this fails, Textual holds its frames some other way: a typed key waits for the
    batch's end again, or (if the count is no longer what ``_display`` reads) draws mid-batch."""
    app = _Two()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        written: list[str] = []
        driver = app._driver
        assert driver is not None
        type(driver).is_headless = property(lambda self: False)  # type: ignore[method-assign,assignment]
        try:
            driver.write = written.append  # type: ignore[method-assign]
            screen, one = app.screen, app.query_one("#one", Static)
            one.update("ONE")
            with app.batch_update():
                assert app._batch_count == 1
                screen._compositor.update_widgets({one})
                screen._compositor_refresh()
                assert "ONE" not in "".join(written)  # held by the batch
                held, app._batch_count = app._batch_count, 0
                one.refresh()  # (the frame held above took the widget's repaint regions)
                screen._compositor.update_widgets({one})
                screen._compositor_refresh()
                app._batch_count += held
                assert "ONE" in "".join(written)  # drawn with the count at 0
        finally:
            del type(driver).is_headless
        assert app._batch_count == 0


async def test_a_driver_hands_events_to_its_app_through_its_app_and_loop():
    """``Driver._app`` and ``Driver._loop``: ui/input_turn.py's driver posts each event with
    ``self._loop.call_soon_threadsafe(self._app.post_message, event)``, one turn of the event loop
    instead of Textual's three. Textual's own ``send_message`` reads the same two names; if this
    fails they were renamed, and every key and click of the app is lost."""
    assert "self._app._post_message(message), loop=self._loop" in inspect.getsource(Driver.send_message)
    import asyncio
    import threading

    from textual.drivers.headless_driver import HeadlessDriver

    from tui_agent.ui.input_turn import one_turn

    app = _Two()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        driver = one_turn(HeadlessDriver)(app)
        assert driver._app is app and driver._loop is asyncio.get_running_loop()
        posted: list[events.Event] = []
        real_post = app.post_message

        def post(message: Any) -> bool:
            posted.append(message)
            return real_post(message)

        app.post_message = post  # type: ignore[method-assign]
        seen_at_next_turn: list[list[Any]] = []
        sent = [events.Key("a", "a"), events.Paste("pasted"), events.Key("b", "b")]

        def from_the_drivers_thread() -> None:
            for event in sent:
                driver.send_message(event)
            driver._loop.call_soon_threadsafe(lambda: seen_at_next_turn.append(list(posted)))

        thread = threading.Thread(target=from_the_drivers_thread)
        thread.start()
        thread.join()
        for _ in range(100):
            if seen_at_next_turn:
                break
            await asyncio.sleep(0.01)
        # In the app's queue, in order, before a callback the thread scheduled after them ran
        # (Textual's driver: still on their way, a task each, at that callback).
        assert seen_at_next_turn == [sent]


async def test_a_message_pump_holds_the_message_it_looked_at_out_of_its_queue():
    """``MessagePump._pending_message``, ``Widget._forward_event`` and ``Screen._clear_tooltip``:
    ui/input_turn.py passes a key straight to the composer only when nothing waits for the app,
    neither in its queue nor the message it took out to look at (``_peek_message``, before it
    handles the one ahead), and passes it on as the app's own handler does. If this fails, a key
    could overtake one the app still holds, or the shortcut calls names Textual no longer has."""
    assert list(inspect.signature(Screen._clear_tooltip).parameters) == ["self"]
    assert "self.post_message(event)" in inspect.getsource(Static._forward_event)
    app = _Two()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        one = app.query_one("#one", Static)
        assert one._pending_message is None
        first, second = events.Key("a", "a"), events.Key("b", "b")
        one._message_queue.put_nowait(first)
        one._message_queue.put_nowait(second)
        assert one.message_queue_size == 2
        # (the pump's task may take them at the next turn: looked at here, in this turn)
        assert one._peek_message() is first
        assert one._pending_message is first and one.message_queue_size == 1
        one._message_queue.values.clear()  # (only ``first`` stays, held: ``second`` is forwarded below)
        assert one.message_queue_size == 0
        app.screen._clear_tooltip()  # no tooltip: nothing to clear, no error
        one._forward_event(second)  # posted: after ``first``, behind the one it holds
        assert second.is_forwarded and one.message_queue_size == 1
        await pilot.pause()
        assert one._pending_message is None and one.message_queue_size == 0  # both handled


def test_strip_renders_through_its_render_cache_and_segments():
    """``Strip._render_cache`` and ``Strip._segments``: ui/text_guard.py replaces ``Strip.render``
    to remove control characters from drawn text, and fills the cache Textual's own render fills.
    If this fails, the guard raises on every line drawn (or draws lines Textual would not)."""
    from rich.console import Console
    from rich.segment import Segment

    strip = Strip([Segment("a"), Segment("b")])
    assert strip._render_cache is None
    assert [segment.text for segment in strip._segments] == ["a", "b"]
    assert strip.render(Console(color_system="truecolor")) == "ab"
    assert strip._render_cache == "ab"  # the cache the guard fills (and Strip.join reads)


@pytest.mark.parametrize("change", ["height inline", "height by class", "hidden", "shown", "mounted", "own rule"])
async def test_a_columns_counters_grow_with_its_childrens_layouts_its_children_and_its_rules(change):
    """``Widget._layout_updates``, ``NodeList._updates`` and ``RenderStyles._cache_key``:
    ui/widgets/reply_markdown.py keeps a sealed part's height, and ui/widgets/column_arrange.py its
    answer to "is this column height-free", until one of them changes. If this fails, a reply's part
    keeps a stale height or arrangement after its blocks or their rules change."""
    from textual.containers import Vertical

    child = Static("b")
    hidden = Static("c")
    hidden.display = False
    column = Vertical(Static("a"), child, hidden)

    class Probe(App[None]):
        CSS = ".tall { height: 3; }"

        def compose(self) -> ComposeResult:
            yield column

    def key() -> tuple[int, int, int]:
        return (column._layout_updates, column._nodes._updates, column.styles._cache_key)

    async with Probe().run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        before = key()
        if change == "height inline":
            child.styles.height = 3
        elif change == "height by class":
            child.add_class("tall")
        elif change == "hidden":
            child.display = False
        elif change == "shown":
            hidden.display = True
        elif change == "mounted":
            await column.mount(Static("d"))
        else:
            column.styles.align_vertical = "bottom"
        await pilot.pause()
        after = key()
        assert after != before and all(a >= b for a, b in zip(after, before, strict=True))


# --- textual-serve ---------------------------------------------------------------------------


def test_textual_serve_app_service_builds_the_apps_environment_in_build_environment():
    """``AppService._build_environment(width, height)``: commands/serve/session.py's service sets
    the page's cell size for the app there. If this fails, pictures in the browser are sized for a
    guessed cell (or the app does not start)."""
    from textual_serve.app_service import AppService

    service = AppService("true", write_bytes=_never, write_str=_never, close=_never, download_manager=object())
    environment = service._build_environment(width=81, height=25)
    assert environment["COLUMNS"] == "81" and environment["ROWS"] == "25"
    assert environment["TEXTUAL_DRIVER"] == "textual.drivers.web_driver:WebDriver"


def test_textual_serve_app_service_keeps_its_download_manager():
    """``AppService._download_manager`` (the constructor's ``download_manager``, with
    ``create_download``): the session's ``on_meta`` starts a download through it to sign its URL.
    If this fails, F4 (save a picture) in the browser fails."""
    from textual_serve.app_service import AppService
    from textual_serve.download_manager import DownloadManager

    manager = DownloadManager()
    service = AppService("true", write_bytes=_never, write_str=_never, close=_never, download_manager=manager)
    assert service._download_manager is manager
    parameters = inspect.signature(manager.create_download).parameters
    assert {"app_service", "delivery_key", "file_name", "open_method", "mime_type", "encoding", "name"} <= set(
        parameters
    )


def test_textual_serve_server_reads_the_pages_messages_in_process_messages():
    """``Server._process_messages(websocket, app_service)``: commands/serve/session.py runs
    textual-serve's own loop over the page's messages (keys, resizes) after answering the
    websocket itself. If this fails, the browser session opens and then takes no input."""
    from textual_serve.server import Server

    method = Server._process_messages
    assert inspect.iscoroutinefunction(method)
    assert list(inspect.signature(method).parameters) == ["self", "websocket", "app_service"]
    source = inspect.getsource(Server.handle_websocket)
    assert "await self._process_messages(websocket, app_service)" in source  # the loop we reuse as is


async def _never(*args: object) -> None:
    raise AssertionError("not called")


# --- openai ----------------------------------------------------------------------------------


async def test_openai_raw_response_header_leaves_the_streamed_body_unread():
    """``openai._constants.RAW_RESPONSE_HEADER``: core/llm.py posts the chat request with it set to
    "stream" so the SDK hands back the HTTP response with its body unread (the reply is read as
    it streams in). If this fails, every chat request fails, or waits for the whole reply."""
    import httpx2
    from openai import AsyncOpenAI
    from openai._constants import RAW_RESPONSE_HEADER

    fake = FakeOpenAI().start()
    try:
        client = AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        response = await client.post(
            "/chat/completions",
            cast_to=httpx2.Response,
            body=body,
            options={"headers": {RAW_RESPONSE_HEADER: "stream"}},
        )
        try:
            assert isinstance(response, httpx2.Response)
            assert not response.is_stream_consumed  # the body is still to be read
            text = (await response.aread()).decode()
            assert "data: [DONE]" in text
        finally:
            await response.aclose()
            await client.close()
    finally:
        fake.stop()


# --- argparse --------------------------------------------------------------------------------


def test_argparse_lists_a_parsers_actions_and_its_subparsers():
    """``ArgumentParser._actions`` and ``argparse._SubParsersAction`` (its ``choices``): cli_parser.py
    walks them so that ``--profile``/``--vault``/``--db`` given before a subcommand are not undone
    by the subcommand's own copy's default. If this fails, ``tui-agent --profile other ask ...``
    uses the active profile instead."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile")
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("ask")
    child.add_argument("--profile")
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(subparsers) == 1 and subparsers[0].choices["ask"] is child
    assert parser.parse_args(["--profile", "p", "ask"]).profile is None  # the child's default wins...
    for action in child._actions:
        if action.dest == "profile":
            action.default = argparse.SUPPRESS  # ...unless it has none, as cli_parser.py makes it
    assert parser.parse_args(["--profile", "p", "ask"]).profile == "p"


# --- the MCP SDK -----------------------------------------------------------------------------


def test_mcp_stdio_helpers_that_the_bounded_reader_reuses():
    """core/mcp/bounded.py is the SDK's ``stdio_client`` with a bounded line reader: it calls the
    SDK's own helpers for everything else (starting the server, parsing a line, draining and
    stopping it, closing the streams). If this fails, MCP servers over stdio do not start or do
    not stop; copy the helper's new form from ``mcp.client.stdio.stdio_client``."""
    from mcp.client import stdio as sdk
    from mcp.shared.message import SessionMessage

    expected = {
        "_get_executable_command": ["command"],
        "_create_platform_compatible_process": ["command", "args", "env", "errlog", "cwd"],
        "_drain_stdout": ["process"],
        "_stop_server_process": ["process"],
        "_aclose_all": ["streams"],
    }
    for name, parameters in expected.items():
        function = getattr(sdk, name)
        assert inspect.iscoroutinefunction(function), name
        assert list(inspect.signature(function).parameters) == parameters, name
    assert isinstance(sdk._WRITER_FLUSH_TIMEOUT, int | float) and sdk._WRITER_FLUSH_TIMEOUT > 0
    parsed = sdk._parse_line(json.dumps({"jsonrpc": "2.0", "id": 7, "result": {}}))
    assert isinstance(parsed, SessionMessage) and parsed.message.id == 7
    assert isinstance(sdk._parse_line("not json"), Exception)  # returned, not raised
    # Each one is still what stdio_client itself calls (bounded.py mirrors that function).
    source = inspect.getsource(sdk.stdio_client)
    for name in (*expected, "_parse_line", "_WRITER_FLUSH_TIMEOUT"):
        assert name in source, f"stdio_client no longer uses {name}: compare bounded.py with it"


async def test_mcp_stdio_helpers_start_and_stop_a_real_process():
    """The two helpers that start and stop the server process, run: a real child starts with the
    arguments given and is gone after ``_stop_server_process``."""
    from mcp.client import stdio as sdk

    command = await sdk._get_executable_command(sys.executable)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=["-c", "import sys; sys.stdin.read()"],
        env=dict(os.environ),
        errlog=sys.stderr,
        cwd=None,
    )
    assert process.pid > 0 and process.returncode is None
    await sdk._stop_server_process(process)
    assert process.returncode is not None


# --- peewee ----------------------------------------------------------------------------------


def test_peewee_close_forgets_the_connection_even_when_closing_it_fails(tmp_path):
    """store/pg.py's ReconnectingDatabase drops a connection the server killed with peewee's public
    ``close()``: it relies on close() forgetting this thread's connection even when closing the
    dead one raises. If this fails, a store whose server restarted keeps the dead connection and
    every query fails until the app restarts."""
    import peewee

    class Failing(peewee.SqliteDatabase):
        def _close(self, conn: object) -> None:
            raise peewee.OperationalError("server closed the connection unexpectedly")

    db = Failing(str(tmp_path / "a.db"))
    db.connect()
    assert not db.is_closed()
    with pytest.raises(peewee.OperationalError):
        db.close()
    assert db.is_closed()  # forgotten: the next query connects again
    db.connect()
    assert db.execute_sql("SELECT 1").fetchone() == (1,)
