"""Console script: the TUI, ``ask``, ``tool``, ``profile``, ``history`` and ``serve``.

Heavy modules (openai, textual) are imported only by the command that needs them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tui_agent import __version__

EPILOG = """\
commands:
  (none)     open the full-screen chat app
  ask        one turn through the agent loop, streamed to stdout
  tool       run one tool directly and print its JSON result
  profile    list, show, create, use and set profiles
  history    list conversations, search, list and restore message revisions
  serve      serve the app in a browser (textual-serve) behind a token

The vault (all data) is --vault > $TUI_AGENT_VAULT > ./jj_vault > the user data dir.
"""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--vault", metavar="PATH", default=argparse.SUPPRESS, help="vault folder (all user data)")
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
    ask.add_argument("--yes", action="store_true", help="approve memory_sql UPDATEs without asking")
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
    search.add_argument("query")
    revs = hsub.add_parser("revisions", parents=[common], help="list kept revisions of edited messages")
    revs.add_argument("--message", type=int, metavar="ID", help="only this message")
    restore = hsub.add_parser("restore", parents=[common], help="put a revision's content back")
    restore.add_argument("id", type=int)

    serve = sub.add_parser("serve", parents=[common], help="serve the app in a browser")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--token", default=None, help="access token (default: $TUI_AGENT_TOKEN or random)")
    serve.add_argument("--profile", metavar="NAME", help="profile to use")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    vault = getattr(args, "vault", None)
    command = args.command
    try:
        if command is None:
            from tui_agent.ui.run import run_app

            return run_app(vault, args.profile)
        if command == "ask":
            from tui_agent.commands.ask import run_ask

            return run_ask(vault, args)
        if command == "tool":
            from tui_agent.commands.tool import run_tool

            return run_tool(vault, args)
        if command == "profile":
            from tui_agent.commands.profile import run_profile

            return run_profile(vault, args)
        if command == "history":
            from tui_agent.commands.history import run_history

            return run_history(vault, args)
        if command == "serve":
            from tui_agent.commands.serve import run_serve

            return run_serve(vault, args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from tui_agent.core.store.errors import store_failure_message

        message = store_failure_message(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
    parser.error(f"unknown command {command}")
    return 2
