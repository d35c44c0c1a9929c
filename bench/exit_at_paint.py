"""Start an app, paint its first frame, exit at once: what the first paint costs, and nothing after.

`python exit_at_paint.py bare` (the bare Textual app) or `python exit_at_paint.py agent` (tui-agent
on $TUI_AGENT_VAULT). Used under callgrind by instructions.py."""

import os
import sys
from pathlib import Path

if sys.argv[1] == "bare":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bare_app import BareApp

    class FirstPaintOnly(BareApp):
        def on_mount(self) -> None:
            self.call_after_refresh(os._exit, 0)

    FirstPaintOnly().run()
else:
    from tui_agent.ui import gc_tuning

    # As the console script does before the app's imports (cli._run_app): no cycle collection until
    # the first frame. Imported here ahead of main(), the app would otherwise be measured without it.
    gc_tuning.pause_startup()
    from tui_agent.cli import main
    from tui_agent.ui.app import AgentApp

    AgentApp._after_first_paint = lambda self: os._exit(0)  # type: ignore[method-assign]
    sys.argv = ["tui-agent"]
    main()
