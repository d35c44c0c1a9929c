"""The app's side of core.approvals: after start-up (and on demand from the palette) the settings
this machine has not approved are looked up in a thread, and if there are any, asked about in a
dialog (screens/settings_approval.py). Approved: the MCP servers start and the next turn gets its
key; not now: they do nothing this run."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from tui_agent.core.approvals import Item
    from tui_agent.core.store.models import Profile

log = logging.getLogger("tui_agent.ui")


class SettingsReview:
    """``approved``: called on the event loop once values were approved (start what waited)."""

    def __init__(self, app: App[Any], profile: Callable[[], Profile], approved: Callable[[], None]) -> None:
        self.app = app
        self.profile = profile
        self.approved = approved
        self.asking = False

    def start(self, tell_if_none: bool = False) -> None:
        """Look up what needs approval off the event loop (it reads the store), then ask."""
        if self.asking:
            return
        self.asking = True
        self.app.run_worker(self._look(tell_if_none), exit_on_error=False, group="approvals")

    async def _look(self, tell_if_none: bool) -> None:
        from tui_agent.core import approvals
        from tui_agent.core.approvals_needed import pending_for
        from tui_agent.core.store import worker

        try:  # on the store's thread (its one connection)
            items = await worker.run(pending_for, self.profile())
        except approvals.ApprovalsError as exc:
            self._say(str(exc), "error")
            return
        except Exception:
            log.exception("looking up the settings to approve failed")
            self.asking = False
            return
        self._ask(items, tell_if_none)

    def _say(self, text: str, severity: str = "information") -> None:
        from tui_agent.core.textsafe import visible

        self.asking = False
        self.app.notify(visible(text), title="Settings", severity=severity, markup=False, timeout=10)  # type: ignore[arg-type]

    def _ask(self, items: list[Item], tell_if_none: bool) -> None:
        if not items:
            self.asking = False
            if tell_if_none:
                self._say("Every setting this profile uses is approved on this machine.")
            return
        from tui_agent.ui.screens.settings_approval import SettingsApprovalScreen

        lines = [f"{item.label}  ({item.where})" for item in items]
        self.app.push_screen(SettingsApprovalScreen(lines), callback=lambda yes: self._answered(items, bool(yes)))

    def _answered(self, items: list[Item], yes: bool) -> None:
        from tui_agent.core import approvals

        self.asking = False
        if not yes:
            self._say("Not approved: those settings do nothing on this machine this run. Later: tui-agent approve")
            return
        try:
            approvals.approve(items)
        except approvals.ApprovalsError as exc:
            self._say(str(exc), "error")
            return
        self._say(f"Approved on this machine: {len(items)} setting(s)")
        self.approved()
