"""The command line's parser. Only the subcommand named on the command line is defined: argparse
spends ~0.1 s defining all of them (a gettext lookup and a help formatter for every option), more
than ``ask``'s own start-up work besides its imports. ``tui-agent --help``, a command line whose
command cannot be told before parsing, or an unknown command get the whole parser, as before."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from tui_agent import __version__

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


#: The top level's options that take a value (``--vault PATH``): the word after one is no command.
VALUED = ("--vault", "--db", "--profile")
TOP_LONG = (*VALUED, "--version", "--help")


def command_named(arguments: Sequence[str]) -> str | None:
    """The subcommand ``arguments`` name, read as argparse reads the top level (abbreviated long
    options, ``--opt=value``); None when there is none, or when anything but an option with a
    value comes first (``-h``, ``--version``, ``-``, an unknown option: the whole parser's own
    help, version or message)."""
    words = iter(arguments)
    for word in words:
        if word.startswith("--") and word != "--":
            name = word.split("=", 1)[0]
            matches = [option for option in TOP_LONG if option.startswith(name)]
            option = name if name in TOP_LONG else (matches[0] if len(matches) == 1 else None)
            if option not in VALUED:
                return None  # help, version, unknown or ambiguous here
            if "=" not in word:
                next(words, None)  # its value, whatever it looks like
            continue
        if word.startswith("-"):
            return None  # -h, "-", "--", a negative number...: as argparse takes it, from the whole parser
        return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the whole command line; with ``command`` (a key of ``COMMANDS``), the only
    subcommand defined is that one (it parses that command's lines exactly as the whole parser)."""
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
    for name, define in COMMANDS.items():
        if command is None or name == command:
            define(sub, common)
    _globals_win(parser, top=True)
    return parser


def _ask(sub: Any, common: argparse.ArgumentParser) -> None:
    ask = sub.add_parser("ask", parents=[common], help="one turn, reply streamed to stdout")
    ask.add_argument("--profile", metavar="NAME", help="profile to use")
    which = ask.add_mutually_exclusive_group()
    which.add_argument("--new", action="store_true", help="start a new conversation")
    which.add_argument("--conversation", type=int, metavar="ID", help="continue conversation ID")
    ask.add_argument("--yes", action="store_true", help="approve memory_sql UPDATEs and MCP tool calls without asking")
    ask.add_argument("--no-reasoning", action="store_true", help="hide the model's reasoning (shown dimmed on stderr)")
    ask.add_argument("--raw", action="store_true", help="print control characters as they are (default: visible)")
    ask.add_argument("text", nargs="+", help="the message (slash commands work too); - reads it from stdin")


def _tool(sub: Any, common: argparse.ArgumentParser) -> None:
    tool = sub.add_parser("tool", parents=[common], help="run one tool, print its JSON result")
    tool.add_argument("--profile", metavar="NAME", help="profile to use")
    tool.add_argument("--yes", action="store_true", help="approve memory_sql UPDATEs")
    tool.add_argument("name", help="tool name (tui-agent tool --list)", nargs="?")
    tool.add_argument("json", nargs="?", help="arguments as a JSON object")
    tool.add_argument("--list", action="store_true", help="list tools and their schemas")


def _profile(sub: Any, common: argparse.ArgumentParser) -> None:
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


def _history(sub: Any, common: argparse.ArgumentParser) -> None:
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


def _serve(sub: Any, common: argparse.ArgumentParser) -> None:
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


def _defined_in(module: str) -> Callable[[Any, argparse.ArgumentParser], None]:
    """A subcommand whose module defines it (``add_parser``), imported only when it is named."""

    def define(sub: Any, common: argparse.ArgumentParser) -> None:
        importlib.import_module(module).add_parser(sub, common)

    return define


#: Each subcommand and what defines it, in the order ``--help`` lists them.
COMMANDS: dict[str, Callable[[Any, argparse.ArgumentParser], None]] = {
    "ask": _ask,
    "tool": _tool,
    "profile": _profile,
    "history": _history,
    "serve": _serve,
    "models": _defined_in("tui_agent.commands.models"),
    "mcp": _defined_in("tui_agent.commands.mcp"),
    "vault": _defined_in("tui_agent.commands.vault"),
    "db": _defined_in("tui_agent.commands.db"),
    "approve": _defined_in("tui_agent.commands.approve"),
}


GLOBAL_OPTIONS = ("profile", "vault", "db")


def _globals_win(parser: argparse.ArgumentParser, top: bool = False) -> None:
    """``--profile`` and ``--vault`` work wherever argparse accepts them: before the subcommand or
    after it. A subcommand's own copy of the option must not put its default (None) over the value
    given before the subcommand (argparse applies a subparser's defaults last), so below the top
    level they default to nothing at all."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _globals_win(child)
        elif not top and action.dest in GLOBAL_OPTIONS:
            action.default = argparse.SUPPRESS


def _port(raw: str) -> int:
    """A TCP port: never a number the socket layer would quietly wrap or replace."""
    try:
        port = int(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (0-65535), got {port}")
    return port
