"""Console script: the TUI, ``ask``, ``tool``, ``profile``, ``history`` and ``serve``.

Heavy modules (openai, textual) are imported only by the command that needs them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from pathlib import Path


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
    from tui_agent.cli_parser import build_parser, command_named

    parser = build_parser(command_named(arguments))
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
