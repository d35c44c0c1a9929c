"""The Footer keeps its keys when the bindings published again are the ones it shows, and shows
what Textual's own Footer shows after every change (both mounted side by side in one app). Also
the contract with Textual: its Footer builds its keys when ``bindings_changed`` is called."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Footer, Static
from textual.widgets._footer import FooterKey

from tests.pilot_helpers import until
from tui_agent.ui.widgets.key_footer import KeyFooter


class Keyed(Static, can_focus=True):
    BINDINGS = [Binding("f3", "act", "Act")]

    def action_act(self) -> None:
        pass


class Keys(App[None]):
    BINDINGS = [Binding("ctrl+q", "quit", "Quit"), Binding("f2", "toggle", "Toggle")]
    toggle_enabled = True

    def compose(self) -> ComposeResult:
        yield Button("a", id="a")
        yield Button("b", id="b")
        yield Keyed("k", id="k")
        yield KeyFooter(id="ours")
        yield Footer(id="theirs")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "toggle" and not self.toggle_enabled else True  # None: shown disabled

    def action_toggle(self) -> None:
        pass


def shown(footer: Footer) -> list[tuple[str, str, bool]]:
    return [(key.key, key.description, key.has_class("-disabled")) for key in footer.query(FooterKey)]


async def test_the_footer_keeps_its_keys_unless_what_it_shows_changes() -> None:
    app = Keys()
    async with app.run_test(size=(100, 12)) as pilot:
        ours, theirs = app.query_one("#ours", Footer), app.query_one("#theirs", Footer)

        async def published(change: Callable[[], object]) -> list[FooterKey]:
            """Make a change that publishes the bindings; wait until Textual's Footer was built
            again for it and ours shows the same keys. Our keys from before the change."""
            kept, before = list(ours.query(FooterKey)), list(theirs.query(FooterKey))
            change()
            await until(
                pilot,
                lambda: (keys := list(theirs.query(FooterKey))) and not set(map(id, keys)) & set(map(id, before)),
                what="Textual's Footer was not built again",
            )
            await until(pilot, lambda: shown(ours) == shown(theirs), what="the footers differ")
            return kept

        def same(kept: list[FooterKey]) -> bool:
            return [id(key) for key in ours.query(FooterKey)] == [id(key) for key in kept]

        await until(pilot, lambda: shown(ours) and shown(ours) == shown(theirs), what="the footers differ")
        await published(app.query_one("#b").focus)  # (a has the focus from the start)

        # Another widget with no keys of its own: the same keys are published again.
        kept = await published(app.query_one("#a").focus)
        await pilot.pause()
        assert same(kept), "the same keys were built again"

        # A widget with a key of its own: built again, with it.
        kept = await published(app.query_one("#k").focus)
        assert "f3" in [key for key, _, _ in shown(ours)]
        assert not set(map(id, ours.query(FooterKey))) & set(map(id, kept))

        # A key disabled in place: built again, drawn disabled.
        app.toggle_enabled = False
        await published(app.refresh_bindings)
        assert ("f2", "Toggle", True) in shown(ours)

        # Published again with nothing changed: kept.
        kept = await published(app.refresh_bindings)
        await pilot.pause()
        assert same(kept) and shown(ours) == shown(theirs)

        # The palette's key hidden (a flag of the Footer's own, not a binding): built again without it.
        ours.show_command_palette = theirs.show_command_palette = False
        await published(app.refresh_bindings)
        assert "ctrl+p" not in [key for key, _, _ in shown(ours)]
