"""Starting the app from the console script (and from ``serve``'s per-session command)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_agent.core.profiles import ProfileError
from tui_agent.core.session import open_session
from tui_agent.core.store.errors import StoreError

if TYPE_CHECKING:
    from tui_agent.ui.app import AgentApp


def make_app(vault_arg: str | None = None, profile_name: str | None = None, **kwargs: Any) -> AgentApp:
    """Build the app from explicit settings (tests and serve use this too)."""
    from tui_agent.core.store import worker
    from tui_agent.ui.app import AgentApp

    # On the store's thread, which keeps its connection for the app's store calls: one connection,
    # not one here and another there (to a server far away, connecting costs round trips).
    session = worker.executor().submit(open_session, vault_arg).result()
    return AgentApp(session.vault, profile_name=profile_name, **kwargs)


def _import_images() -> None:
    from tui_agent.ui import images

    images.prepare(first_run=_first_run())


def _first_run() -> bool:
    """A cold terminal (kitty's first start) can answer late: the first probe waits longer."""
    import platformdirs

    marker = Path(platformdirs.user_cache_dir("tui-agent", appauthor=False)) / "terminal-probed"
    if marker.exists():
        return False
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
    return True


def run_app(vault_arg: str | None, profile_name: str | None) -> int:
    # The image probe asks the terminal (it waits for the terminal's replies); that must finish
    # before the app reads the keyboard, but it can overlap with the other imports.
    probe = threading.Thread(target=_import_images, name="image-probe")
    probe.start()
    try:
        app = make_app(vault_arg, profile_name)
    except ProfileError as exc:
        probe.join()
        print(f"error: profile {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        probe.join()  # the terminal's replies to the image probe must not spill into the shell
        print(f"error: {exc}", file=sys.stderr)
        return 1
    probe.join()
    from tui_agent.ui import images

    images.log_choice()  # after make_app: the vault's log file is set up by then
    # A closed terminal or a SIGTERM ends the app within seconds, whatever it is doing.
    from tui_agent.core.store.last_write import bound_store
    from tui_agent.ui import lifeline
    from tui_agent.ui.gc_tuning import freeze_long_lived

    lifeline.guard_driver(app, lifeline.install(bound_store()))
    app.freeze_gc_after_preload = True
    freeze_long_lived()
    from tui_agent.core.store import worker

    worker.release_this_thread()  # from here on the store's own thread talks to it: one connection
    from tui_agent.ui.terminal_probe import forget_stale_size

    forget_stale_size()  # the terminal's own size, not one left in the environment
    app.run()
    return 0
