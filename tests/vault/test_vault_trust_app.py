"""The app in a cloned folder's untrusted jj_vault: a start-up dialog asks (issue 26 item 1).

"Not now": the chat works on what it can read, but no MCP server starts, no image command runs and
the key is never sent (the fake server's headers are checked). "Trust it": remembered, and the
servers start and the key goes with the next request, in the same run.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import Reply
from mcp_helpers import MCP_START_S
from pilot_helpers import answer, send, until
from test_vault_trust import SECRET, Clone, clone  # noqa: F401 - the fixture

from tui_agent.core import trust
from tui_agent.ui.run import make_app
from tui_agent.ui.screens.trust import TrustScreen
from tui_agent.ui.widgets.bubbles import ErrorCard


def start_in(cloned: Clone, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(cloned.repo)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "CLONED_KEY"):
        monkeypatch.setenv(name, cloned.env[name])
    return make_app(None, images="halfcell", check_endpoint=False, clock=lambda: 0.0, animate=False)


@pytest.mark.slow
async def test_not_now_runs_nothing_and_sends_no_key(clone, monkeypatch):  # noqa: F811
    # The first dialog stays inert until the test arms it (as its timer would), so the key is typed
    # ahead however slow the machine is: a fixed 3 s was a guess at a loaded machine's speed.
    delay = TrustScreen.ARM_DELAY_S
    monkeypatch.setattr(TrustScreen, "ARM_DELAY_S", 3600)
    app = start_in(clone, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TrustScreen))
        await pilot.press("t")  # typed ahead, before the dialog is live: swallowed, not an answer
        assert isinstance(app.screen, TrustScreen) and not app.screen.armed
        text = str(app.screen.query_one("#trust-text").render())
        assert str(clone.vault) in text
        assert "start the MCP server cloned:" in text
        assert "run the image command" in text
        assert f"send your $CLONED_KEY (an API key) to {clone.fake.base_url}" in text
        monkeypatch.setattr(TrustScreen, "ARM_DELAY_S", delay)  # the dialog asked again below waits as shipped
        app.screen.arm()
        await until(pilot, lambda: app.screen.armed)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, TrustScreen))
        await until(pilot, lambda: app.startup.preload_done.is_set())
        await until(pilot, lambda: app.mcp._starting is None or app.mcp._starting.done())
        clone.fake.script(Reply(text="should not be asked"))
        app.conversation_view.composer.load_text("hi")
        await pilot.press("enter")
        await until(pilot, lambda: app.query(ErrorCard) and not app.turns)
        assert app.conversation_view.composer.text == "hi"  # nothing was sent: the message is back for another try
        cards = [str(card.render()) for card in app.query(ErrorCard)]
        assert any(
            "This vault is not trusted yet" in card and "CLONED_KEY is not read or sent" in card for card in cards
        )
        assert app.mcp.states() == {}
        clone.nothing_ran()
        # Changed their mind: the command palette's "Trust this vault" asks again, and the message goes.
        await app.run_action("trust_vault")
        await until(pilot, lambda: isinstance(app.screen, TrustScreen) and app.screen.armed)
        await pilot.press("t")
        await until(pilot, lambda: app.mcp.states().get("cloned", ("",))[0] == "ready", MCP_START_S)
        await pilot.press("enter")
        await until(pilot, lambda: len(clone.fake.chat_requests) == 1 and not app.turns)
        assert clone.keys_sent() == [f"authorization: Bearer {SECRET}"]
        assert clone.fake.chat_requests[0]["messages"][-1]["content"] == "hi"


@pytest.mark.slow
async def test_not_now_is_for_this_run_only(clone, monkeypatch):  # noqa: F811
    app = start_in(clone, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        await answer(app, pilot, TrustScreen, "n")
        await until(pilot, lambda: app.startup.preload_done.is_set())
        await until(pilot, lambda: app.mcp._starting is None or app.mcp._starting.done())
    clone.nothing_ran()
    assert clone.fake.requests == []
    assert not (clone.config / "tui-agent" / "trusted-vaults.json").exists()
    again = start_in(clone, monkeypatch)  # the next start asks again
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(again.screen, TrustScreen) and again.screen.armed)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(again.screen, TrustScreen))
    clone.nothing_ran()


@pytest.mark.slow
async def test_trust_it_starts_the_servers_and_sends_the_key_in_the_same_run(clone, monkeypatch):  # noqa: F811
    app = start_in(clone, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        await answer(app, pilot, TrustScreen, "t")
        stored = clone.config / "tui-agent" / "trusted-vaults.json"
        assert json.loads(stored.read_text())["trusted"] == [str(clone.vault)]
        assert trust.untrusted_vault() is None
        await until(pilot, lambda: app.mcp.states().get("cloned", ("",))[0] == "ready", MCP_START_S)
        assert clone.mcp_marker.exists()
        clone.fake.script(Reply(text="hello"))
        await send(app, pilot, "hi")
        assert [r["messages"][-1]["content"] for r in clone.fake.chat_requests] == ["hi"]
        assert clone.keys_sent() == [f"authorization: Bearer {SECRET}"]
