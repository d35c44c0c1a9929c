"""Console script: the TUI, ``ask``, ``tool``, ``profile``, ``history`` and ``serve``.

Heavy modules (openai, textual) are imported only by the command that needs them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tui_agent import __version__

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

EPILOG = """\
commands:
  (none)     open the full-screen chat app
  ask        one turn through the agent loop, streamed to stdout
  tool       run one tool directly and print its JSON result
  profile    list, show, create, use and set profiles
  models     the server's models: the window each really runs with, what each can do
  history    list, search, export and import conversations; message revisions
  serve      serve the app in a browser (textual-serve) behind a token
  mcp        MCP servers: list, add, remove, enable, disable, policy, test
  vault      trust a vault that came with the current folder: trust, untrust, status
  db         where the history lives: use, show, forget, copy, setup (SQLite by default, or PostgreSQL)
  approve    approve here the settings changed in the shared store (MCP servers, endpoints, image command)

The vault (all data) is --vault > $TUI_AGENT_VAULT > ./jj_vault > the user data dir. A ./jj_vault
runs no program and sends no API key until you trust it (tui-agent vault trust).
The store is --db > $TUI_AGENT_DB > `tui-agent db use` > the vault's agent.db.
A setting that runs a program or carries a key takes effect on a machine only once approved there.
"""


def build_parser() -> argparse.ArgumentParser:
    import argparse

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--vault", metavar="PATH", default=argparse.SUPPRESS, help="vault folder (all user data)")
    common.add_argument(
        "--db",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="the store: sqlite:///path/agent.db (default: the vault's) or postgresql://user@host/dbname",
    )
    parser = argparse.ArgumentParser(
        prog="tui-agent",
        description="A full-screen terminal chat agent: one LLM, tools as its hands.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"tui-agent {__version__}")
    parser.add_argument("--profile", metavar="NAME", help="profile to use (default: the active one)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ask = sub.add_parser("ask", parents=[common], help="one turn, reply streamed to stdout")
    ask.add_argument("--profile", metavar="NAME", help="profile to use")
    which = ask.add_mutually_exclusive_group()
    which.add_argument("--new", action="store_true", help="start a new conversation")
    which.add_argument("--conversation", type=int, metavar="ID", help="continue conversation ID")
    ask.add_argument("--yes", action="store_true", help="approve memory_sql UPDATEs and MCP tool calls without asking")
    ask.add_argument("--no-reasoning", action="store_true", help="hide the model's reasoning (shown dimmed on stderr)")
    ask.add_argument("--raw", action="store_true", help="print control characters as they are (default: visible)")
    ask.add_argument("text", nargs="+", help="the message (slash commands work too); - reads it from stdin")

    tool = sub.add_parser("tool", parents=[common], help="run one tool, print its JSON result")
    tool.add_argument("--profile", metavar="NAME", help="profile to use")
    tool.add_argument("--yes", action="store_true", help="approve memory_sql UPDATEs")
    tool.add_argument("name", help="tool name (tui-agent tool --list)", nargs="?")
    tool.add_argument("json", nargs="?", help="arguments as a JSON object")
    tool.add_argument("--list", action="store_true", help="list tools and their schemas")

    profile = sub.add_parser("profile", parents=[common], help="manage profiles")
    psub = profile.add_subparsers(dest="action", metavar="ACTION", required=True)
    psub.add_parser("list", parents=[common], help="list profiles (* marks the active one)")
    show = psub.add_parser("show", parents=[common], help="show a profile's fields")
    show.add_argument("name", nargs="?")
    create = psub.add_parser("create", parents=[common], help="create a profile (a copy of --from, or defaults)")
    create.add_argument("name")
    create.add_argument("--from", dest="source", metavar="NAME", help="copy fields from this profile")
    use = psub.add_parser("use", parents=[common], help="make a profile the active one")
    use.add_argument("name")
    pset = psub.add_parser("set", parents=[common], help="set one field (validated)")
    pset.add_argument("--profile", metavar="NAME", help="profile to change (default: the active one)")
    pset.add_argument("key")
    pset.add_argument("value")
    psub.add_parser("fields", parents=[common], help="list the fields with help")

    hist = sub.add_parser("history", parents=[common], help="conversations, search and revisions")
    hsub = hist.add_subparsers(dest="action", metavar="ACTION", required=True)
    hsub.add_parser("list", parents=[common], help="list conversations")
    search = hsub.add_parser("search", parents=[common], help="full-text search over messages")
    search.add_argument(
        "query", nargs="+", help='words (all must match); "a phrase", word*, -word to leave out (quotes optional)'
    )
    search.add_argument(
        "--before", type=int, metavar="ID", help="the next page: hits older than this (printed as more:)"
    )
    revs = hsub.add_parser("revisions", parents=[common], help="list kept revisions of edited messages")
    revs.add_argument("--message", type=int, metavar="ID", help="only this message")
    restore = hsub.add_parser("restore", parents=[common], help="put a revision's content back")
    restore.add_argument("id", type=int)
    export = hsub.add_parser("export", parents=[common], help="write a conversation as Markdown or JSON")
    export.add_argument("id", type=int, help="conversation id (tui-agent history list)")
    export.add_argument("--format", choices=("md", "json"), default="md", help="md (images copied beside) or json")
    export.add_argument(
        "--out", metavar="PATH", help="output file (default: ./conversation-ID-title.md|json; - for stdout)"
    )
    export.add_argument("--reasoning", action="store_true", help="include the model's reasoning (Markdown)")
    export.add_argument("--force", action="store_true", help="replace an existing file (never through a symlink)")
    imp = hsub.add_parser("import", parents=[common], help="read a JSON export back as a new conversation")
    imp.add_argument("file", help="a file written by history export --format json (- for stdin)")

    serve = sub.add_parser("serve", parents=[common], help="serve the app in a browser")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8000, help="TCP port, 1-65535 (0: any free port, printed)")
    serve.add_argument("--token", default=None, help="access token (default: $TUI_AGENT_TOKEN or random)")
    serve.add_argument("--profile", metavar="NAME", help="profile to use")
    serve.add_argument(
        "--max-sessions", type=int, default=4, metavar="N", help="browser sessions (app processes) at once"
    )
    serve.add_argument(
        "--public-url",
        metavar="URL",
        help="behind a reverse proxy: the address browsers use (https://agent.example.com); the printed link uses it",
    )

    from tui_agent.commands.models import add_parser as add_models_parser

    add_models_parser(sub, common)
    from tui_agent.commands.mcp import add_parser as add_mcp_parser

    add_mcp_parser(sub, common)
    from tui_agent.commands.vault import add_parser as add_vault_parser

    add_vault_parser(sub, common)
    from tui_agent.commands.db import add_parser as add_db_parser

    add_db_parser(sub, common)
    from tui_agent.commands.approve import add_parser as add_approve_parser

    add_approve_parser(sub, common)
    _globals_win(parser, top=True)
    return parser


GLOBAL_OPTIONS = ("profile", "vault", "db")


def _globals_win(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """``--profile`` and ``--vault`` work wherever argparse accepts them: before the subcommand or
    after it. A subcommand's own copy of the option must not put its default (None) over the value
    given before the subcommand (argparse applies a subparser's defaults last), so below the top
    level they default to nothing at all."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _globals_win(child)
        elif not top and action.dest in GLOBAL_OPTIONS:
            action.default = argparse.SUPPRESS


def _port(raw: str) -> int:
    """A TCP port: never a number the socket layer would quietly wrap or replace."""
    import argparse

    try:
        port = int(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {port}")
    return port


def _pipe_closed() -> int:
    """The reader left (``| head``): stop quietly. Further writes (at exit, too) go nowhere."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE, as a shell tool killed by the closed pipe


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        # The plain `tui-agent`: straight to the app (argparse and the subcommands cost ~20 ms of
        # the first paint, and there is nothing to parse).
        code = _guarded(lambda: _run_app(None, None))
        return 0 if code is None else code
    parser = build_parser()
    from tui_agent.commands.mcp import split_command_line

    arguments, mcp_command_line = split_command_line(arguments)
    args, extras = parser.parse_known_args(arguments)
    if getattr(args, "command", None) == "history" and getattr(args, "action", None) == "search":
        # `-word` (leave out) as the README writes it, unquoted: argparse takes it for an option.
        words = [extra for extra in extras if extra.startswith("-") and not extra.startswith("--") and extra != "-"]
        extras = [extra for extra in extras if extra not in words]
        args.query = " ".join([*args.query, *words])
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if mcp_command_line is not None:
        args.command_line = mcp_command_line
    vault = getattr(args, "vault", None)
    if getattr(args, "db", None):
        import os

        from tui_agent.core.store import location
        from tui_agent.core.store.errors import StoreError

        try:
            location.parse(args.db)
        except StoreError as exc:
            parser.error(f"--db: {exc}")
        # Through the environment: every process this one starts (serve's apps, the memory tool's
        # worker) uses the same store.
        os.environ[location.DB_ENV] = args.db
    command = args.command
    found = _guarded(lambda: _dispatch(command, vault, args))
    if found is not None:
        return found
    parser.error(f"unknown command {command}")
    return 2


def _dispatch(command: str | None, vault: str | None, args: argparse.Namespace) -> int | None:
    """Run the command; ``None`` for an unknown one."""
    refused = _trust_gate(command, vault, args)
    if refused is not None:
        return refused
    if command is None:
        return _run_app(vault, args.profile)
    if command == "ask":
        from tui_agent.commands.ask import run_ask

        return run_ask(vault, args)
    if command == "tool":
        from tui_agent.commands.tool import run_tool

        return run_tool(vault, args)
    if command == "profile":
        from tui_agent.commands.profile import run_profile

        return run_profile(vault, args)
    if command == "models":
        from tui_agent.commands.models import run_models

        return run_models(vault, args)
    if command == "history":
        from tui_agent.commands.history import run_history

        return run_history(vault, args)
    if command == "serve":
        from tui_agent.commands.serve import run_serve

        return run_serve(vault, args)
    if command == "mcp":
        from tui_agent.commands.mcp import run_mcp

        return run_mcp(vault, args)
    if command == "vault":
        from tui_agent.commands.vault import run_vault

        return run_vault(vault, args)
    if command == "db":
        from tui_agent.commands.db import run_db

        return run_db(vault, args)
    if command == "approve":
        from tui_agent.commands.approve import run_approve

        return run_approve(vault, args)
    return None


def _trust_gate(command: str | None, vault: str | None, args: argparse.Namespace) -> int | None:
    """``ask`` without a terminal, ``serve`` and ``mcp test`` in a vault that came with the current
    folder and is not trusted: one line saying how, exit 1 (``ask`` at a terminal asks first).
    The app asks in a dialog; everything else runs, with no program started and no key sent."""
    if command not in ("ask", "serve") and not (command == "mcp" and getattr(args, "action", None) == "test"):
        return None
    from tui_agent.core import trust
    from tui_agent.core.textsafe import visible
    from tui_agent.core.vault import resolve_vault

    root, found_here = resolve_vault(vault)
    if not found_here:
        return None
    try:
        if trust.key(root) in trust.trusted_paths():
            return None
    except trust.TrustStoreError as exc:  # a list someone else could have written: not believed (ssh's rule)
        print(f"error: {visible(str(exc))}; the vault {visible(str(root))} is not trusted", file=sys.stderr)
        return 1

    name = visible(str(root))  # in full: the command in the message must work when copied
    if command == "ask" and args.text != ["-"] and sys.stdin.isatty() and sys.stderr.isatty():
        return _ask_to_trust(root, name)
    print(
        f"error: the vault {name} came with the current folder and is not trusted (it could start programs and "
        f"use your API key): trust it with `tui-agent vault trust {name}`, or name it with --vault",
        file=sys.stderr,
    )
    return 1


def _ask_to_trust(root: Path, name: str) -> int | None:
    from tui_agent.core import trust

    sys.stderr.write(
        f"The vault {name} came with the current folder. Trusting it lets it start its MCP servers, run its "
        "image command and use the API key its profile names.\nTrust it? [y/N] "
    )
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        print("not trusted: no MCP server, no image command, no API key this time", file=sys.stderr)
        return None
    try:
        trust.trust(root)
    except trust.TrustStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"trusted {name}", file=sys.stderr)
    return None


def _run_app(vault: str | None, profile: str | None) -> int:
    from tui_agent.ui import gc_tuning

    # Before the app's imports: no cycle collection until the first frame is drawn (gc_tuning.pause).
    gc_tuning.pause_startup()
    try:
        from tui_agent.ui.run import run_app

        return run_app(vault, profile)
    finally:
        gc_tuning.resume(gc_tuning.STARTUP)  # the app ended before its first frame


def _guarded(run: Callable[[], int | None]) -> int | None:
    """Ctrl+C, a closed pipe and a broken store end with one line and an exit code, not a traceback."""
    try:
        return run()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _pipe_closed()
    except Exception as exc:
        from tui_agent.core.store.errors import store_failure_message

        message = store_failure_message(exc)
        if message is None:
            raise
        from tui_agent.core.textsafe import visible

        # A store's message can quote a server's own words (PostgreSQL's errors): shown, never acted on.
        print(f"error: {visible(message)}", file=sys.stderr)
        return 1
