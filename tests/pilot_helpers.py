"""Driving the app in a test (``App.run_test()``): the app factory, the one wait helper, and a turn
sent and finished. Test modules import these (``from pilot_helpers import make, send, until``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_agent.ui.app import AgentApp


def make(env: Any, app_class: type[AgentApp] | None = None, **kwargs: Any) -> AgentApp:
    """The app on a test's vault (the ``env`` fixture, or a Vault): deterministic (half-cell
    pictures, a frozen clock, no animation) and with no endpoint check unless asked for;
    ``app_class``: a subclass of the app to make instead (one with more CSS, say)."""
    from tui_agent.ui.app import AgentApp

    settings: dict[str, Any] = {"images": "halfcell", "clock": lambda: 0.0, "animate": False, "check_endpoint": False}
    return (app_class or AgentApp)(getattr(env, "vault", env), **(settings | kwargs))


async def until(pilot: Any, condition: Callable[[], Any], timeout: float = 30.0, what: str = "") -> None:
    """Wait for a state (never for a fixed time): ``condition()`` true, checked every 20 ms while the
    app runs (``pilot`` None: no app, plain asyncio). ``timeout`` only bounds a test that fails."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            assert condition(), what or "the state waited for never came"
            return
        await (pilot.pause(0.02) if pilot is not None else asyncio.sleep(0.02))


def eventually(condition: Callable[[], Any], timeout: float = 40.0, what: str = "") -> Any:
    """``until`` for a test with no app of its own to drive (a server, a terminal, a browser): what
    ``condition()`` gave once it was true, checked every 0.1 s."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" if what else "the state waited for never came")
        time.sleep(0.1)
    return found


async def steady_screen(app: Any, pilot: Any, timeout: float = 30.0) -> str:
    """Wait for the screen to be laid out and still (never for a fixed time): until two frames in a
    row, a pause apart, are the same (mounts, layout and scrolls done); that screen, as the SVG export."""
    shots: list[str] = []

    def steady() -> bool:  # the first shot is taken at the first check: the next one after a pause
        shots.append(app.export_screenshot())
        return len(shots) > 1 and shots[-1] == shots[-2]

    await until(pilot, steady, timeout, "the screen never held still")
    return shots[-1]


async def settle(app: AgentApp, pilot: Any, timeout: float = 120.0) -> None:
    """Until no turn runs (then one more pause, for what the turn's end posted). ``timeout`` only
    bounds a test that fails: a long reply's turn took over 30 s on a loaded machine.

    A turn's worker, not only ``app.turns``: Esc takes the turn out of ``app.turns`` at once (the
    conversation is free again) while its worker still closes the reply as cancelled (loaded run 62
    read the bubble's status before that)."""

    def ended() -> bool:
        return not app.turns and not any(w.group == "turns" and not w.is_finished for w in app.workers)

    await until(pilot, ended, timeout, "the turn did not finish")
    await pilot.pause()


async def send(app: AgentApp, pilot: Any, text: str, *, wait: bool = True) -> None:
    """Type ``text`` into the composer and press Enter; unless ``wait`` is False, until its turn ended."""
    app.conversation_view.composer.load_text(text)
    await pilot.press("enter")
    # The app took it (a turn started, or the composer was emptied) before its turn's end is waited
    # for; a message the app refuses stays in the composer, and no turn starts.
    for _ in range(100):
        if app.turns or not app.conversation_view.composer.text:
            break
        await pilot.pause(0.01)
    if wait:
        await settle(app, pilot)


async def mount_after_a_turn(app: AgentApp, pilot: Any, bubble: Any) -> Any:
    """A first turn ("hi", answered), then ``bubble`` mounted at the end of the chat log: a reply the
    test writes itself, once the app's first reply has loaded what a turn loads. Returns ``bubble``."""
    await send(app, pilot, "hi")
    await app.conversation_view.chat_log.mount(bubble)
    return bubble


@asynccontextmanager
async def running(env: Any, *replies: Any, size: tuple[int, int] = (120, 40), **kwargs: Any) -> AsyncIterator[Any]:
    """The app (``make(env, **kwargs)``) running at ``size``: ``(app, pilot)``. ``replies``
    (``Reply``s, or plain texts) are scripted first."""
    from fake_openai import Reply

    if replies:
        env.fake.script(*(Reply(text=r) if isinstance(r, str) else r for r in replies))
    app = make(env, **kwargs)
    async with app.run_test(size=size) as pilot:
        yield app, pilot


@asynccontextmanager
async def one_turn(env: Any, text: str, *replies: Any, size: tuple[int, int] = (120, 40)) -> AsyncIterator[Any]:
    """The app running, after ``text`` was sent and its turn ended: ``(app, pilot)``. ``replies``
    (``Reply``s, or plain texts) are scripted first, for this turn and any that follow."""
    async with running(env, *replies, size=size) as (app, pilot):
        await send(app, pilot, text)
        yield app, pilot


async def answer(app: Any, pilot: Any, screen: type, key: str) -> None:
    """Once a modal of type ``screen`` is up and armed (it ignores keys before), press ``key`` and
    wait for it to close."""
    await until(pilot, lambda: isinstance(app.screen, screen) and app.screen.armed)
    await pilot.press(key)
    await until(pilot, lambda: not isinstance(app.screen, screen))


async def send_approved(app: Any, pilot: Any, text: str) -> str:
    """Send ``text``, say yes to the approval it leads to, wait for the turn's end: the question asked."""
    from tui_agent.ui.screens.dialogs import ApprovalScreen

    app.conversation_view.composer.load_text(text)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
    question = app.screen.question
    await answer(app, pilot, ApprovalScreen, "y")
    await until(pilot, lambda: not app.turns)
    return str(question)


def children(app: AgentApp, kind: Any) -> list[Any]:
    """The chat log's widgets of one kind (a class or a selector)."""
    return list(app.conversation_view.chat_log.query(kind))


def on_screen(app: AgentApp, widget: Any) -> bool:
    """The widget is mounted and drawn inside the chat log's visible region."""
    log = app.conversation_view.chat_log
    region = widget.region
    return widget.is_attached and region.height > 0 and log.region.contains_region(region)


def notifications(app: Any) -> list[str]:
    """Every notification the app posted, in order (kept by conftest's ``notices_kept``)."""
    return list(app.__dict__.get("notices_seen", []))


def screen_text(app: AgentApp) -> str:
    """The screen as text: the SVG export's text runs, joined line by line."""
    import html
    import re

    svg = app.export_screenshot()
    lines: dict[float, list[str]] = {}
    for match in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        lines.setdefault(float(match.group(1)), []).append(html.unescape(match.group(2)).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items()))


def text_backgrounds(bubble: Any) -> set[object]:
    """The backgrounds the text of ``bubble`` is drawn on: each cell with a character, in it and in
    every widget inside it that has no background of its own (buttons do)."""
    from textual.geometry import Region

    found = set()
    for node in [bubble, *bubble.walk_children()]:
        if (node is not bubble and node.styles.background.a) or not node.size.area:
            continue
        for strip in node.render_lines(Region(0, 0, *node.size)):
            found |= {segment.style.bgcolor for segment in strip if segment.text.strip() and segment.style}
    return found
