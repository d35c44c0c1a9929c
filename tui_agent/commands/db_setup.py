"""``tui-agent db setup [--print] [--user ROLE]``: memory_sql's walls on a PostgreSQL store.

Creates (again, harmlessly, when they exist) the role memory_sql's statements run as, the schema
of views it reads and their grants (core/store/pg_memory.py). ``--print`` only prints that SQL,
for a DBA who must run it; it connects to nothing. memory_sql also runs it by itself the first
time, when the connected user may.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path


def add_parser(dsub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    setup = dsub.add_parser(
        "setup",
        parents=[common],
        help="PostgreSQL: create memory_sql's role, views and grants (safe to run again)",
    )
    setup.add_argument(
        "--print", dest="print_sql", action="store_true", help="print the SQL for a DBA instead of running it"
    )
    setup.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="ROLE",
        help="a PostgreSQL user that runs tui-agent and may use memory_sql (repeatable; default: the store's user)",
    )


def run_setup(root: Path, args: argparse.Namespace, *, trusted: bool = True) -> int:
    from tui_agent.core.store import backends, location, pg_memory
    from tui_agent.core.store.errors import StoreError
    from tui_agent.core.textsafe import visible

    try:
        url = location.resolve(root, trusted=trusted)
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    if args.print_sql:
        # For a DBA, before any PostgreSQL store is in use (print, have it run, then `db use`): no
        # store is needed, and nothing connects.
        try:
            members = [pg_memory.check_name(user) for user in args.user]
        except ValueError as exc:
            print(f"error: {visible(str(exc))}", file=sys.stderr)
            return 2
        default = url.user or os.environ.get("PGUSER") or getpass.getuser()  # a SQLite URL has no user
        print(pg_memory.setup_sql(members or [default]), end="")
        return 0
    backend = backends.backend_for(url)
    if not backend.memory_needs_setup:
        print(
            f"error: the store is {backend.name} ({visible(url.where())}): `db setup` is for a PostgreSQL store "
            f"(on {backend.name} memory_sql needs no set-up)",
            file=sys.stderr,
        )
        return 1
    try:
        members = [pg_memory.check_name(user) for user in args.user]
    except ValueError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 2
    return _apply(url, members)


def _apply(url: object, members: list[str]) -> int:
    from tui_agent.core.store import backends
    from tui_agent.core.store.errors import StoreError
    from tui_agent.core.textsafe import visible

    try:
        store = backends.open(url)  # type: ignore[arg-type]  # the tables first: the views read them
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    try:
        done = store.set_up_memory(members)
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(visible(done))
    return 0
