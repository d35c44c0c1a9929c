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
    from tui_agent.core.store import location, pg_memory
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
        known = url.user if url.is_postgresql else None
        default = known or os.environ.get("PGUSER") or getpass.getuser()
        print(pg_memory.setup_sql(members or [default]), end="")
        return 0
    if not url.is_postgresql:
        print(
            f"error: the store is SQLite ({visible(url.where())}): `db setup` is for a PostgreSQL store "
            "(on SQLite memory_sql needs no set-up)",
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
    import psycopg

    from tui_agent.core.store import pg_memory
    from tui_agent.core.store.db import open_store
    from tui_agent.core.store.errors import StoreError
    from tui_agent.core.textsafe import visible

    where = url.where()  # type: ignore[attr-defined]
    try:
        db = open_store(url)  # type: ignore[arg-type]  # the tables first: the views read them
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    user = url.user or "?"  # type: ignore[attr-defined]
    try:
        conn = db.connection()
        user = str(conn.info.user)
        pg_memory.apply(conn, members or None)
    except psycopg.Error as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        print(
            f"error: PostgreSQL user {visible(user)} could not set up memory_sql in "
            f"{visible(where)} ({visible(first)}): run it as the tables' owner with the right to create roles, "
            "or give a DBA the SQL of `tui-agent db setup --print`",
            file=sys.stderr,
        )
        return 1
    finally:
        db.close()
    shown = ", ".join(members or [user])
    print(
        f"memory_sql is set up in {visible(where)}: it runs as the role {pg_memory.ROLE} "
        f"(member: {visible(shown)}), reading only the views of the schema {pg_memory.SCHEMA}"
    )
    return 0
