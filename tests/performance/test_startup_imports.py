"""Start-up stays lean: what the first paint does not need is not imported before it.

Each check runs in a fresh interpreter (this test process has imported everything already)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = [
    "openai",  # ~0.5 s: imported in the background after the first paint (ui/warmup.py)
    "textual_image",  # ~0.2 s: with the first image, or in the background
    "tui_agent.core.loop",  # the turn loop and the LLM client: on the first turn
    "tui_agent.core.llm",
    "importlib.metadata",  # tool plugins are looked up when the tools are built
    "markdown_it",  # the reply bubble's parser: warmed in the background
]


def printed(code: str) -> object:
    """What ``code``, run in a fresh interpreter (json and sys imported), printed last, as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{code}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def imported_by(code: str, modules: list[str] = HEAVY) -> object:
    return printed(f"{code}\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))")


def test_the_app_module_and_its_launcher_import_nothing_heavy():
    assert imported_by("import tui_agent.cli, tui_agent.ui.run, tui_agent.ui.app, tui_agent.ui.images") == []


@pytest.mark.slow
def test_the_warm_up_imports_what_the_first_turn_needs():
    code = "from tui_agent.ui import warmup\nassert warmup.wait(60)\nwarmup._thread.join(60)"
    assert imported_by(code) == HEAVY


@pytest.mark.slow
def test_the_request_path_comes_first_and_what_shows_the_reply_after_the_client():
    """The app's warm-up: what the first request needs, then (once the app has built its client, so
    the two do not share the core) Markdown, which only the reply bubble needs."""
    code = (
        "from tui_agent.ui import warmup\n"
        "warmup.start(hold_for_client=True)\n"
        "assert warmup.wait_for_request(60)\n"
        "before = [m for m in ('openai', 'tui_agent.core.loop', 'markdown_it') if m in sys.modules]\n"
        "assert not warmup._done.wait(0.5)  # held until the client is built\n"
        "warmup.client_built()\n"
        "assert warmup.wait(60)\n"
        "print(json.dumps(before))\n"
    )
    assert printed(code) == ["openai", "tui_agent.core.loop"]


@pytest.mark.slow
def test_the_first_paint_imports_nothing_heavy(tmp_path):
    """Not only the modules: the app run to its first frame (headless, a new SQLite vault) has
    imported none of it either. textual-image and Pillow crept in through a widget asking the app
    what it is (ui/widgets/host.host_of ran every property of the app, image_class too); the history
    search, the PostgreSQL backend and live listener, through module-level imports."""
    heavy = [
        *HEAVY,
        "PIL",
        "psycopg",
        "tui_agent.ui.history_search",  # with the palette's first opening
        "tui_agent.core.store.search",
        "tui_agent.core.store.backends.postgres",  # a SQLite store never loads PostgreSQL's backend
        "tui_agent.ui.live_updates",  # nothing to follow on SQLite
        "tui_agent.core.store.pg_listen",
        "tui_agent.ui.cell_follow",  # a resize before the first frame is looked at after it
    ]
    code = (
        "import asyncio\n"
        "from tui_agent.ui.app import AgentApp\n"
        "from tui_agent.ui.run import make_app\n"
        "painted = []\n"
        "AgentApp._after_first_paint = lambda self: painted.append(set(sys.modules))\n"
        f"app = make_app({str(tmp_path / 'vault')!r}, check_endpoint=False, animate=False)\n"
        "async def main():\n"
        "    async with app.run_test(size=(120, 40)) as pilot:\n"
        "        while not painted:\n"
        "            await pilot.pause(0.02)\n"
        "asyncio.run(main())\n"
        f"print(json.dumps([m for m in {heavy!r} if m in painted[0]]))"
    )
    assert printed(code) == []


def test_widgets_the_first_screen_does_not_draw_are_imported_when_first_needed():
    """Each Textual widget class costs its subclass set-up (bindings, CSS) at import: the tool
    blocks, thinking blocks, spinners and the message menu come with their first use."""
    later = [
        "tui_agent.ui.widgets.tool_block",
        "tui_agent.ui.tool_failures",
        "tui_agent.ui.widgets.thinking",
        "tui_agent.ui.widgets.spinner",
        "tui_agent.ui.screens.message_actions",
        "tui_agent.ui.code_blocks",
        "tui_agent.ui.turn_view",
        "tui_agent.core.mcp.config",  # MCP servers start after the preload
    ]
    assert imported_by("import tui_agent.cli, tui_agent.ui.run, tui_agent.ui.app, tui_agent.ui.images", later) == []


@pytest.mark.slow
def test_a_message_sent_during_the_warm_up_gets_its_first_words_before_markdown():
    """Sent before the warm-up is over, the request and the reply's first words (drawn without
    Markdown) come before the Markdown import, which would share the core with them."""
    code = (
        "from tui_agent.ui import warmup\n"
        "warmup.start(hold_for_client=True)\n"
        "warmup.turn_started()\n"
        "warmup.client_built()\n"
        "assert warmup.wait_for_request(60)\n"
        "held = not warmup._done.wait(0.5) and 'markdown_it' not in sys.modules\n"
        "warmup.first_words_shown()\n"
        "assert warmup.wait(60)\n"
        "print(json.dumps([held, 'markdown_it' in sys.modules]))\n"
    )
    assert printed(code) == [True, True]


def test_help_imports_neither_the_store_nor_asyncio():
    """``tui-agent --help`` (and a subcommand's) only builds the parser: no peewee, asyncio, store (~0.3 s)."""
    heavy = ["peewee", "asyncio", "sqlite3", "tui_agent.core.store", "tui_agent.core.profiles", "openai", "textual"]
    for argv in (["--help"], ["mcp", "--help"], ["history", "export", "--help"]):
        code = (
            "from tui_agent.cli import main\n"
            "try:\n"
            f"    main({argv!r})\n"
            "except SystemExit:\n"
            "    pass\n"
            f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
        )
        assert printed(code) == [], argv


def test_after_the_warm_up_anyio_imports_nothing_on_its_first_connection():
    """The warm-up reaches anyio's lazily imported socket layer and asyncio backend through public
    API: the first request's connection (as httpcore2 opens it) imports no anyio module."""
    code = (
        "from tui_agent.ui import warmup\n"
        "assert warmup.wait(60)\n"
        "import asyncio, socket, anyio\n"
        "before = set(sys.modules)\n"
        "server = socket.create_server(('127.0.0.1', 0))\n"
        "async def connect():\n"
        "    stream = await anyio.connect_tcp('127.0.0.1', server.getsockname()[1])\n"
        "    await stream.aclose()\n"
        "asyncio.run(connect())\n"
        "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('anyio'))))"
    )
    assert printed(code) == []
