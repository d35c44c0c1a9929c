"""The approval modal answers only what the user meant: no typed-ahead keys, no early keys, "Always" twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from memory_sql_helpers import edit_first_message
from pilot_helpers import running, until
from textual.app import App
from textual.widgets import Button, Static

from tui_agent.core.store import history
from tui_agent.core.store.models import Message
from tui_agent.ui.screens.approval import ApprovalScreen

QUESTION = "This UPDATE changes the content of 1 message.\n\n#1 user\n  old: a\n  new: b"


class Host(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(ApprovalScreen("memory_sql", QUESTION), self.answers.append)


@asynccontextmanager
async def inert_dialog() -> AsyncIterator[tuple[Host, Any, ApprovalScreen]]:
    """The approval dialog on screen, not yet armed: ``(app, pilot, the dialog)``."""
    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        yield app, pilot, screen


async def wait_armed(pilot, screen: ApprovalScreen) -> None:
    for _ in range(200):
        if screen.armed:
            return
        await pilot.pause(0.05)
    raise AssertionError("the approval modal never armed")


async def test_keys_and_clicks_before_arming_are_ignored(monkeypatch):
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY_S", 3600)  # stays inert for the whole test
    async with inert_dialog() as (app, pilot, screen):
        for key in ("y", "enter", "space", "a", "tab", "enter", "y", "n", "escape"):
            await pilot.press(key)
        await pilot.click("#yes")
        await pilot.pause()
        assert app.screen is screen and app.answers == []
        assert not screen.confirming_always
        assert all(button.disabled for button in screen.query(Button))
        screen.arm()
        await pilot.pause()
        assert not any(button.disabled for button in screen.query(Button))
        assert app.focused is screen.query_one("#no")
        await pilot.press("y")
        await pilot.pause()
    assert app.answers == ["yes"]


async def test_a_key_while_inert_restarts_the_wait(monkeypatch):
    # The first wait never ends by itself, so the key comes while inert however slow the machine is
    # (at load 8 the 0.5 s were over before the key: it answered "yes"); the wait it restarts is
    # the product's own, and only that one can arm the dialog.
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY_S", 3600)
    async with inert_dialog() as (app, pilot, screen):
        timer = screen._arm_timer
        monkeypatch.undo()
        await pilot.press("y")
        assert app.answers == []  # swallowed (the restarted wait may be over already on a slow machine)
        assert screen._arm_timer is not timer  # and the wait began again
        await wait_armed(pilot, screen)
        await pilot.press("n")
        await pilot.pause()
    assert app.answers == ["no"]


async def arm_now(pilot, screen: ApprovalScreen) -> None:
    screen.arm()  # what the timer does once no key came for ARM_DELAY_S
    await pilot.pause()


async def test_always_needs_a_second_confirmation(monkeypatch):
    # The timer never fires by itself here, so "disarmed after a" holds however slow the machine is.
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY_S", 3600)
    async with inert_dialog() as (app, pilot, screen):
        await arm_now(pilot, screen)
        await pilot.press("a")
        await pilot.pause()
        assert app.answers == [] and screen.confirming_always and not screen.armed
        text = str(screen.query_one("#approval-question", Static).render())
        assert "for the rest of this session" in text
        assert not screen.query_one("#always").display
        await pilot.press("y")  # too soon after the question changed: swallowed
        await pilot.pause()
        assert app.answers == [] and screen.confirming_always
        await arm_now(pilot, screen)
        await pilot.press("n")  # back to the question, nothing decided
        await pilot.pause()
        assert app.answers == [] and not screen.confirming_always
        assert "old: a" in str(screen.query_one("#approval-question", Static).render())
        await arm_now(pilot, screen)
        await pilot.press("a")
        await arm_now(pilot, screen)
        await pilot.press("a")  # "a" again is not a confirmation
        await pilot.pause()
        assert app.answers == []
        await pilot.press("y")
        await pilot.pause()
    assert app.answers == ["always"]


async def test_y_typed_ahead_into_the_composer_changes_nothing(env, monkeypatch):
    """The attack: the user types "y" while the model's UPDATE is on its way."""
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY_S", 3600)
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "original")
    env.fake.script(*edit_first_message())
    async with running(env) as (app, pilot):
        app.conversation_view.composer.load_text("fix my first message")
        await pilot.press("enter", "y", "y", "enter", "y")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await pilot.press("y", "enter", "a", "y")
        await pilot.pause()
        assert app.screen is screen and not screen.confirming_always
        assert Message.get_by_id(1).content == "original"
        screen.arm()
        await pilot.pause()
        await pilot.press("n")
        await until(pilot, lambda: not app.turns)
        assert not app.always_approve
    assert Message.get_by_id(1).content == "original"
    results = [m.content for m in Message.select().where(Message.role == "memory_tool")]
    assert results and "the user declined this UPDATE" in results[0]
