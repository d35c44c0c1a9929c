"""``tui-agent mcp list | add | remove | enable | disable | policy | test``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tui_agent.core.textsafe import revealed, visible

# The store, profiles and asyncio are imported by the functions that run a command: `tui-agent
# --help` builds this parser and must not pay for them (~0.3 s).


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``mcp`` subcommand and its actions (called by ``cli_parser.build_parser``)."""
    mcp = sub.add_parser("mcp", parents=[common], help="MCP servers (tools from other programs)")
    msub = mcp.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = msub.add_parser("list", parents=[common], help="list servers (on/off for the profile)")
    listing.add_argument("--profile", metavar="NAME", help="show on/off for this profile")
    add = msub.add_parser(
        "add",
        parents=[common],
        help="add a server: NAME -- COMMAND [ARGS...] (stdio) or NAME --url URL (streamable HTTP)",
    )
    add.add_argument("name")
    add.add_argument("--url", default="", help="streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    add.add_argument("--header", action="append", default=[], metavar="NAME=ENVVAR", help="HTTP header from an env var")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment for the command")
    add.add_argument("--cwd", default="", help="working directory for the command")
    add.add_argument("--policy", default="ask", help="ask (default: each call waits for your yes) or auto")
    add.add_argument(
        "--auto", action="append", default=[], metavar="TOOL", help="run this tool without asking (repeatable)"
    )
    add.add_argument(
        "--timeout", type=float, default=None, help="seconds a call may take (default: the profile's mcp_timeout_s)"
    )
    add.add_argument("--disabled", action="store_true", help="add it switched off")
    add.add_argument("command_line", nargs="*", help="-- COMMAND ARGS... for a stdio server")
    remove = msub.add_parser("remove", parents=[common], help="remove a server")
    remove.add_argument("name")
    for action, text in (("enable", "switch a server on"), ("disable", "switch a server off")):
        toggle = msub.add_parser(action, parents=[common], help=f"{text} (everywhere, or for one --profile)")
        toggle.add_argument("name")
        toggle.add_argument("--profile", metavar="NAME", help="only for this profile")
    policy = msub.add_parser("policy", parents=[common], help="set ask|auto for a server or one of its tools")
    policy.add_argument("name")
    policy.add_argument("policy", help="ask or auto")
    policy.add_argument("--tool", help="only this tool")
    test = msub.add_parser("test", parents=[common], help="start a server, list its tools, stop it")
    test.add_argument("name")


def split_command_line(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``mcp add NAME [OPTIONS] -- COMMAND ARGS...``: argparse cannot take options between a positional
    and ``--`` followed by more positionals, so the command line after ``--`` is cut off first."""
    if "mcp" in argv and "add" in argv[argv.index("mcp") :] and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, None


def run_mcp(vault_arg: str | None, args: argparse.Namespace) -> int:
    from tui_agent.core import profiles
    from tui_agent.core.mcp import config as mcp_config
    from tui_agent.core.session import open_session

    session = open_session(vault_arg)
    try:
        return _dispatch(session, args)
    except (mcp_config.McpConfigError, profiles.ProfileError) as exc:
        print(visible(f"error: {exc}"), file=sys.stderr)
        return 2
    finally:
        session.close()


def _dispatch(session: Any, args: argparse.Namespace) -> int:
    import asyncio

    from tui_agent.core import profiles
    from tui_agent.core.mcp import config as mcp_config

    profile_name = getattr(args, "profile", None)
    if args.action == "list":
        profile = profiles.get_profile(profile_name) if profile_name else profiles.active_profile()
        servers = mcp_config.list_servers(profile)
        if not servers:
            print("no MCP servers; add one with: tui-agent mcp add NAME -- COMMAND [ARGS...]")
        from tui_agent.core import approvals

        for server in servers:
            if server.error:
                print(visible(f"err {server.name}\t{server.error}"))
                continue
            tools = "".join(f" {tool}={policy}" for tool, policy in sorted(server.tool_policies.items()))
            state = "on " if server.enabled else "off"
            mark = (
                ""
                if approvals.approved(mcp_config.approval_item(server))
                else "\t(not approved here: tui-agent approve)"
            )
            print(
                visible(f"{state} {server.name}\t{server.transport}\t{server.policy}{tools}\t{server.describe()}{mark}")
            )
        return 0
    if args.action == "add":
        return _add(args)
    if args.action == "remove":
        mcp_config.remove_server(args.name)
        print(f"removed MCP server {args.name}")
        return 0
    if args.action in ("enable", "disable"):
        only = profiles.get_profile(profile_name) if profile_name else None
        mcp_config.set_enabled(args.name, args.action == "enable", only)
        where = f" for profile {only.name}" if only else ""
        print(f"MCP server {args.name} {'on' if args.action == 'enable' else 'off'}{where}")
        return 0
    if args.action == "policy":
        mcp_config.set_policy(args.name, args.policy, args.tool)
        print(f"{args.name}{'.' + args.tool if args.tool else ''}: {args.policy}")
        return 0
    return asyncio.run(_test(session, args.name))


def _add(args: argparse.Namespace) -> int:
    from tui_agent.core.mcp import config as mcp_config

    command_line = list(args.command_line)
    if command_line[:1] == ["--"]:
        command_line = command_line[1:]
    if args.url and command_line:
        raise mcp_config.McpConfigError("command", "give either --url (http) or -- COMMAND (stdio), not both")
    if not args.url and not command_line:
        raise mcp_config.McpConfigError("command", "missing: tui-agent mcp add NAME -- COMMAND [ARGS...] or --url URL")
    config = mcp_config.ServerConfig(
        name=args.name,
        transport="http" if args.url else "stdio",
        command=command_line[0] if command_line else "",
        args=command_line[1:],
        env=mcp_config.parse_pairs("env", args.env),
        cwd=args.cwd,
        url=args.url,
        headers=mcp_config.parse_pairs("headers", args.header),
        policy=args.policy,
        tool_policies={tool: "auto" for tool in args.auto},
        timeout_s=args.timeout,
        enabled=not args.disabled,
    )
    mcp_config.add_server(config)
    print(f"added MCP server {config.name} ({config.transport}: {config.describe()}), policy {config.policy}")
    print(f"check it with: tui-agent mcp test {config.name}")
    return 0


def _approved_here(config: Any) -> int | None:
    """The server as stored must be approved on this machine: asked at a terminal, else one line."""
    from tui_agent.commands.approve import ask, at_terminal
    from tui_agent.core import approvals
    from tui_agent.core.approvals_needed import refusal
    from tui_agent.core.mcp import config as mcp_config

    item = mcp_config.approval_item(config)
    try:
        if not approvals.pending([item]):
            return None
        if at_terminal() and ask([item]):
            approvals.approve([item])
            return None
    except approvals.ApprovalsError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    print(f"error: {refusal([item])}", file=sys.stderr)
    return 1


async def _test(session: Any, name: str) -> int:
    from tui_agent.core import profiles
    from tui_agent.core.mcp import config as mcp_config
    from tui_agent.core.mcp.manager import McpManager
    from tui_agent.core.tools.registry import ToolRegistry

    config = mcp_config.get_server(name)
    config.enabled = True
    profile = profiles.active_profile()
    if (refused := _approved_here(config)) is not None:
        return refused
    manager = McpManager(session.vault, ToolRegistry())
    connection = manager.configure_one(config, float(profile.mcp_timeout_s))
    try:
        ok = await connection.start()
        if not ok:
            print(visible(f"error: MCP server {name} {connection.state}: {connection.error}"), file=sys.stderr)
            print(visible(f"its stderr is in {connection.log_path}"), file=sys.stderr)
            return 1
        # Names and descriptions are the server's text: shown, never acted on by the terminal.
        print(visible(f"MCP server {name}: ready, {len(connection.tools)} tool(s)"))
        for note in connection.notes:
            print(visible(f"note: {note}"))
        for tool in connection.tools:
            description = (tool.description or "").strip().splitlines()
            line = f"  {tool.name} ({config.policy_for(tool.name)}): {description[0] if description else ''}"
            print(revealed(line))
        return 0
    finally:
        await manager.aclose()
