"""``tui-agent vault trust | untrust | status [PATH]``: the trust list of vaults found in a folder."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def run_vault(vault_arg: str | None, args: argparse.Namespace) -> int:
    """Nothing here opens the vault: trusting one writes only to your own config folder."""
    from tui_agent.core import trust
    from tui_agent.core.textsafe import visible
    from tui_agent.core.vault import VAULT_ENV, resolve_vault

    if args.path:
        root, found_here = Path(args.path).expanduser().resolve(), False
        inner = root / "jj_vault"
        if inner.is_dir() and not (root / "agent.db").exists():  # the project folder was named
            root = inner.resolve()
    else:
        root, found_here = resolve_vault(vault_arg)
    name = visible(str(root))
    try:
        if args.action == "trust":
            if not root.is_dir():
                print(f"error: {name} is not a folder: name the vault folder (the jj_vault)", file=sys.stderr)
                return 2
            changed = trust.trust(root)
            print(
                f"trusted {name}: its MCP servers, image command and API key variable are used from now on"
                if changed
                else f"{name} was trusted already"
            )
            return 0
        if args.action == "untrust":
            changed = trust.untrust(root)
            print(f"{name} is no longer trusted" if changed else f"{name} was not trusted")
            return 0
        listed = root.exists() and str(root) in trust.trusted_paths()
    except trust.TrustStoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    if args.path or found_here:
        if found_here:
            state = "trusted" if listed else "not trusted: it runs no program and sends no API key"
            print(f"{name}: {state} (it came with the current folder)")
        else:
            state = "in your trust list" if listed else "not in your trust list"
            print(f"{name}: {state} (that matters when it is found as ./jj_vault)")
    elif vault_arg:
        print(f"{name}: trusted (chosen with --vault)")
    elif os.environ.get(VAULT_ENV):
        print(f"{name}: trusted (chosen with ${VAULT_ENV})")
    else:
        print(f"{name}: trusted (your own vault)")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    vault = sub.add_parser(
        "vault", parents=[common], help="trust a vault that came with a folder (./jj_vault): trust, untrust, status"
    )
    vsub = vault.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (
        ("trust", "let this vault run its MCP servers and image command and use its API key variable"),
        ("untrust", "take the vault off the trust list"),
        ("status", "is the vault trusted? (default: the one tui-agent would open here)"),
    ):
        parser = vsub.add_parser(action, parents=[common], help=text)
        parser.add_argument("path", nargs="?", help="the vault folder (default: the one tui-agent would open here)")
