"""``tui-agent db use | show | forget``: which store holds the history (see core/store/location.py).
``db copy`` and ``db setup`` live in their own modules."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    db = sub.add_parser("db", parents=[common], help="where the history lives: SQLite (default) or PostgreSQL")
    dsub = db.add_subparsers(dest="action", metavar="ACTION", required=True)
    use = dsub.add_parser(
        "use", parents=[common], help="keep the history in this store from now on (remembered in the vault)"
    )
    use.add_argument("url", help="sqlite:///path/agent.db or postgresql://user@host:5432/dbname")
    dsub.add_parser("show", parents=[common], help="the store in use, where that choice comes from, its schema")
    dsub.add_parser("forget", parents=[common], help="go back to the vault's own agent.db")
    from tui_agent.commands.db_copy import add_copy_parser
    from tui_agent.commands.db_setup import add_parser as add_setup_parser

    add_copy_parser(dsub, common)
    add_setup_parser(dsub, common)


def run_db(vault_arg: str | None, args: argparse.Namespace) -> int:
    if args.action == "copy":
        from tui_agent.commands.db_copy import run_copy

        return run_copy(vault_arg, args)
    from tui_agent.core import trust
    from tui_agent.core.store import location
    from tui_agent.core.store.errors import StoreError
    from tui_agent.core.textsafe import visible
    from tui_agent.core.vault import Vault, resolve_vault

    root, found_here = resolve_vault(vault_arg)
    trusted = not found_here or trust.is_trusted(root)
    if args.action == "setup":
        from tui_agent.commands.db_setup import run_setup

        return run_setup(root, args, trusted=trusted)
    try:
        if args.action == "use":
            url = location.parse(args.url, base=Path.cwd())
            if url.password or url.credentials:  # checked before connecting: nothing is written
                location.remember(root, url)
            Vault(root).init()
            _open_and_close(url)
            location.remember(root, url)
            note = ""
            if os.environ.get(location.DB_ENV):
                note = f" (this shell's ${location.DB_ENV} still wins while it is set)"
            print(f"the history of {visible(str(root))} is now kept in {visible(url.where())}{note}")
            return 0
        if args.action == "forget":
            location.remember(root, None)
            print(f"the history of {visible(str(root))} is kept in its own agent.db again")
            return 0
        url = location.resolve(root, trusted=trusted)
        if os.environ.get(location.DB_ENV):
            source = f"${location.DB_ENV} (or --db)"
        elif location.remembered(root):
            source = f"`tui-agent db use` (kept in {location.LOCAL_SETTINGS})"
        else:
            source = "the default: the vault's own file"
        print(f"store:  {visible(url.text)}")
        from tui_agent.core.store import backends

        print(f"kind:   {backends.backend_for(url).name}")
        print(f"chosen: {source}")
        return 0
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1


def _open_and_close(url: object) -> None:
    """Reach the store and bring its schema up to date: `db use` fails now, not at the next start."""
    from tui_agent.core.store.db import open_store

    open_store(url).close()  # type: ignore[arg-type]
