"""``tui-agent approve``: the settings changed in the shared store that this machine has not approved
(MCP servers, endpoints with their key variable, the image command), shown whole, approved here on
a yes (core.approvals). ``ask`` and ``mcp test`` ask the same question at a terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_agent.core.approvals import Item
    from tui_agent.core.store.models import Profile


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    approve = sub.add_parser(
        "approve",
        parents=[common],
        help="approve on this machine the settings changed in the shared store (MCP servers, endpoints, image command)",
    )
    approve.add_argument("--profile", metavar="NAME", help="the profile to review (default: the active one)")
    approve.add_argument("--yes", action="store_true", help="approve everything listed without asking")


def at_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def show(items: list[Item], file: Any = None) -> None:
    """Each value whole, every invisible character shown (what is approved must be seen)."""
    from tui_agent.core.textsafe import revealed

    for item in items:
        print(revealed(f"  • {item.label}  ({item.where})"), file=file or sys.stderr)


def ask(items: list[Item]) -> bool:
    """At a terminal: the question, and a yes typed by the user."""
    sys.stderr.write("Changed on another machine (in the shared store), not approved on this one:\n")
    show(items)
    sys.stderr.write("Approve? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def review(profile: Profile, interactive: bool) -> int | None:
    """Before a run that would use the profile: None when everything is approved (or approved now at
    the terminal); else the exit code, after one line saying how."""
    from tui_agent.core import approvals, trust
    from tui_agent.core.approvals_needed import pending_for, refusal
    from tui_agent.core.textsafe import visible

    if trust.untrusted_vault() is not None:
        return None  # nothing runs in it anyway (core.trust), and the run says so itself
    try:
        items = pending_for(profile)
        if not items:
            return None
        if interactive and ask(items):
            approvals.approve(items)
            return None
    except approvals.ApprovalsError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    from tui_agent.core.profiles import active_profile

    other = "" if active_profile().name == profile.name else profile.name
    print(f"error: {refusal(items, other)}", file=sys.stderr)
    return 1


def run_approve(vault_arg: str | None, args: argparse.Namespace) -> int:
    from tui_agent.core import approvals
    from tui_agent.core.approvals_needed import pending_for
    from tui_agent.core.profiles import ProfileError
    from tui_agent.core.session import open_session
    from tui_agent.core.textsafe import visible

    session = open_session(vault_arg)
    try:
        profile = session.profile(getattr(args, "profile", None))
        items = pending_for(profile)
        if not items:
            print(f"nothing to approve: what profile {visible(profile.name)} uses is approved on this machine")
            return 0
        if args.yes or (at_terminal() and ask(items)):
            approvals.approve(items)
            print(f"approved on this machine: {len(items)} setting(s)")
            return 0
        if at_terminal():
            print("not approved: they do nothing on this machine", file=sys.stderr)
            return 1
        print("not approved on this machine:", file=sys.stderr)
        show(items)
        print("answer at a terminal (tui-agent approve), or pass --yes to approve them all", file=sys.stderr)
        return 1
    except ProfileError as exc:
        print(visible(f"error: profile {exc}"), file=sys.stderr)
        return 2
    except approvals.ApprovalsError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    finally:
        session.close()
