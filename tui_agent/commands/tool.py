"""``tui-agent tool NAME JSON``: run one tool directly. Exit 0 ok, 1 tool error, 2 bad usage."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tui_agent.core.profiles import ProfileError
from tui_agent.core.session import open_session
from tui_agent.core.textsafe import visible
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.registry import ToolArgumentError, default_registry


def run_tool(vault_arg: str | None, args: argparse.Namespace) -> int:
    registry = default_registry()
    if args.list or not args.name:
        if not args.list:
            print("usage: tui-agent tool NAME JSON   (tools: " + ", ".join(registry.names()) + ")", file=sys.stderr)
            return 2
        print(json.dumps(registry.schemas(), indent=2))
        return 0
    if args.name not in registry:
        print(f"error: unknown tool {args.name!r} (tools: {', '.join(registry.names())})", file=sys.stderr)
        return 2
    try:
        arguments = registry.parse_arguments(args.name, args.json if args.json is not None else "{}")
    except ToolArgumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        session = open_session(vault_arg)
        profile = session.profile(args.profile)
    except ProfileError as exc:
        print(f"error: profile {exc}", file=sys.stderr)
        return 2

    async def approve(tool: str, question: str) -> bool:
        if not args.yes:
            print(visible(f"[{tool}] refused: pass --yes to approve: {question}"), file=sys.stderr)
        return bool(args.yes)

    ctx = ToolContext(session.vault, profile, approve)
    result = asyncio.run(registry.execute(args.name, arguments, ctx))
    print(visible(result.to_json()))  # JSON escapes C0 controls itself; C1 ones (0x9B CSI) it keeps
    return 0 if result.is_ok else 1
