"""The store's server went away: a pause, not a crash (issue 35).

A message sent while the server is away could not be stored: it goes back into the composer (as
nothing was stored, turn_runner), and the status line names the server and says the message is
sent when it answers. The app looks for the server every ``RETRY_S`` (on the store's thread);
once it answers, what an outage cut short is marked ended (a reply left ``streaming``), and the
kept message is sent, once, if the composer still holds it as it was (the user may have changed
or sent it meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from tui_agent.core.store import recovery, worker
from tui_agent.core.textsafe import visible

if TYPE_CHECKING:
    from textual.worker import Worker

    from tui_agent.core.store.models import Profile
    from tui_agent.ui.widgets.composer import Composer
    from tui_agent.ui.widgets.status import StatusLine

log = logging.getLogger("tui_agent.ui")
RETRY_S = 1.0


class OutageHost(Protocol):
    """What this needs of the conversation view."""

    turns: dict[int | None, Any]

    @property
    def conversation_id(self) -> int | None: ...
    @property
    def composer(self) -> Composer: ...
    @property
    def status_line(self) -> StatusLine: ...
    @property
    def profile(self) -> Profile: ...
    def run_worker(self, work: Any, *, group: str = ..., exit_on_error: bool = ...) -> Worker[Any]: ...


class StoreOutage:
    def __init__(self, view: OutageHost) -> None:
        self.view = view
        self.kept: str | None = None  # the message sent when the server is back
        self.watcher: Worker[None] | None = None
        self.where = ""

    @property
    def away(self) -> bool:
        return self.watcher is not None and self.watcher.is_running

    def begin(self, kept: str | None, where: str) -> None:
        """The store is away (``where``: the server, as its error named it); keep ``kept`` to send."""
        self.kept = kept if kept else self.kept
        self.where = where
        self.view.status_line.show(self.waiting_line(), state="offline")
        if not self.away:
            self.watcher = self.view.run_worker(self._watch(), group="store-outage", exit_on_error=False)

    def waiting_line(self) -> str:
        # The context meter shares the line: the promise first, the server's name (any length) last,
        # cut with an ellipsis where the line ends (#status does not wrap).
        sent = ": your message is sent when it answers" if self.kept else ""
        return visible(f"waiting for the database server{sent} · {self.where}")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(RETRY_S)
            try:
                await worker.run(recovery.ping)
                await worker.run(recovery.finish_pending)
                break
            except Exception as exc:  # still away
                log.debug("store still away: %s", exc)
        log.info("the store answers again")
        view = self.view
        view.status_line.ready(view.profile.chat_model)
        kept, self.kept = self.kept, None
        if kept and view.composer.text == kept and view.conversation_id not in view.turns:
            from tui_agent.ui.widgets.composer import Composer

            view.composer.post_message(Composer.Submitted(kept))
