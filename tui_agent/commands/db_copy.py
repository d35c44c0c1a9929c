"""``tui-agent db copy SRC DST``: move a vault's history (every row and picture) between stores;
the rules are in core/store/copy.py. A progress bar on stderr when it is a terminal, one count at
the end on stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_copy_parser(dsub: Any, common: argparse.ArgumentParser) -> None:
    copy = dsub.add_parser(
        "copy",
        parents=[common],
        help="copy every row and picture from one store to another (idempotent: run again, nothing changes)",
        description="Copy every row and picture of SRC into DST, ids and branches kept. Rows already in DST "
        "are skipped; a row with the same id but other values stops the copy before anything is written.",
    )
    copy.add_argument("source", metavar="SRC", help="sqlite:///path/agent.db or postgresql://user@host/dbname")
    copy.add_argument("destination", metavar="DST", help="the store to copy into (made if it does not exist)")


class _Bar:
    """Rich's progress bar on stderr (imported only when stderr is a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("{task.description:>8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rows and pictures"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
        )
        self._task: Any = None

    def __enter__(self) -> _Bar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def phase(self, name: str, total: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[-1].total)
        self._task = self._progress.add_task(name, total=total)

    def advance(self, count: int) -> None:
        self._progress.advance(self._task, count)


def run_copy(vault_arg: str | None, args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from tui_agent.core.store import location
    from tui_agent.core.store.copy import copy_store
    from tui_agent.core.store.errors import StoreError
    from tui_agent.core.textsafe import visible
    from tui_agent.core.vault import resolve_vault

    try:
        root, _ = resolve_vault(vault_arg)
        source = location.parse(args.source, base=Path.cwd())
        destination = location.parse(args.destination, base=Path.cwd())
        bar = _Bar() if sys.stderr.isatty() else None
        with bar if bar is not None else nullcontext():
            report = copy_store(source, destination, current_vault=root, progress=bar)
    except StoreError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: the destination's rows were rolled back (nothing copied)", file=sys.stderr)
        return 130
    for kind, paths in (
        ("not found", report.pictures_missing),
        ("refused (not a path under media/)", report.pictures_refused),
    ):
        if paths:
            shown = ", ".join(visible(path) for path in paths[:3]) + (", ..." if len(paths) > 3 else "")
            print(
                f"warning: {len(paths)} picture(s) the source names were {kind}: {shown} (their rows were copied)",
                file=sys.stderr,
            )
    print(f"{report.summary()} ({visible(source.where())} -> {visible(destination.where())})")
    return 0
