"""Widgets read the app through one typed door (ui/widgets/host.py), never by attribute name."""

from __future__ import annotations

import re

from pilot_helpers import make
from repo_paths import ROOT
from textual.app import App, ComposeResult

from tui_agent.ui.widgets.host import PLAIN, WidgetHost, host_of
from tui_agent.ui.widgets.spinner import Spinner
from tui_agent.ui.widgets.thinking import ThinkingBlock, toggle_all

UI = ROOT / "tui_agent" / "ui"


def test_no_widget_reaches_the_app_by_name() -> None:
    found = [
        f"{path.relative_to(UI)}:{n}"
        for path in sorted(UI.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"getattr\((self\.)?app\b", line)
    ]
    assert found == []


async def test_the_app_is_a_widget_host_and_its_widgets_read_it(env) -> None:
    app = make(env, clock=lambda: 7.0)
    assert isinstance(app, WidgetHost) and host_of(app) is app
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.conversation_view.composer.cursor_blink is False  # live_motion from the app: not animated
        spinner = Spinner("working")
        await app.conversation_view.chat_log.mount(spinner)
        await pilot.pause()
        assert spinner._started == 7.0  # the app's clock
        assert toggle_all(app) is False and app.thinking_hidden is True
        block = ThinkingBlock("why", live=False)
        await app.conversation_view.chat_log.mount(block)
        await pilot.pause()
        assert block.display is False  # a block that comes later reads the toggle from the app


async def test_telling_whether_an_app_is_a_host_reads_none_of_its_members(env) -> None:
    """The app's ``image_class`` imports textual-image and Pillow (~0.1 s): Python 3.11's isinstance
    on the Protocol ran it (and every other property) when the composer, mounted for the first paint,
    asked ``host_of`` for ``live_motion``."""
    app = make(env)
    assert host_of(app) is app
    assert app._image_class is None  # not resolved: nothing read

    class Counting(Bare):
        reads = 0
        live_motion = False
        thinking_hidden = False
        conversation_id = None

        def when_painted(self, callback) -> None:  # type: ignore[no-untyped-def]
            callback()

        def _read(self) -> None:
            type(self).reads += 1

        clock = property(lambda self: self._read())  # type: ignore[assignment]
        idle_gc = property(lambda self: self._read())
        mcp = property(lambda self: self._read())
        image_class = property(lambda self: self._read())
        vault = property(lambda self: self._read())

    counting = Counting()
    assert host_of(counting) is counting and Counting.reads == 0
    del Counting.vault  # a member missing: not a host
    assert host_of(counting) is PLAIN and Counting.reads == 0


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Spinner("working")


async def test_a_plain_app_gives_its_widgets_the_defaults() -> None:
    app = Bare()
    assert host_of(app) is PLAIN
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        spinner = app.query_one(Spinner)
        assert spinner._started == 0.0
        assert toggle_all(app) is False  # nothing stored anywhere: PLAIN stays as it is
        assert PLAIN.thinking_hidden is False


def test_the_turn_uses_only_the_apps_public_interface() -> None:
    """turn_runner and turn_view are typed by ui/host.TurnHost (no private member in it) and touch
    nothing private of the app (it was ``_preloaded()``, ``_preload_done``, ``_show_pending()``, ``_title()``)."""
    from tui_agent.ui.host import TurnHost

    members = sorted(TurnHost.__protocol_attrs__) if hasattr(TurnHost, "__protocol_attrs__") else None
    if members is None:  # Python 3.11: what the class defines, less typing's own bookkeeping
        members = [n for n in vars(TurnHost) if not n.startswith("__") and n not in ("_is_protocol", "_abc_impl")]
        members += list(TurnHost.__annotations__)
    assert "client_ready" in members and "show_pending_attachments" in members
    assert [name for name in members if name.startswith("_")] == []
    for name in ("turn_runner.py", "turn_view.py"):
        text = (UI / name).read_text(encoding="utf-8")
        assert re.findall(r"\bapp\._\w+", text) == [], name
