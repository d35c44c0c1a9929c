"""One memory_sql statement's cost, a worker forked by memory_sql's forker against a worker started
as a program: `python bench/memory_sql_call.py [--calls 20]`.

Each call is ``sql_worker.run_in_worker`` with a quick SELECT on a small SQLite file, and a
PostgreSQL request to a port nobody listens on (the worker loads psycopg and pglast, then fails
to connect: its start-up alone). The two ways alternate, call by call. Reported per way and
store: the median wall clock of a call, and the median CPU time of the processes that served it
(a program's: this process's reaped children; a forked worker's: the forker's, which reaps it,
and the fork itself). The forker's own start is the first forked call of each store, reported
apart."""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from tui_agent.core.tools import sql_forked, sql_worker
from tui_agent.core.tools.sql_run import Limits, Request

TICK = os.sysconf("SC_CLK_TCK")


def forker_cpu() -> float:
    """The forker's CPU time and its reaped workers', in seconds (0 before it runs)."""
    forker = sql_forked._FORKER
    if forker is None:
        return 0.0
    fields = Path(f"/proc/{forker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / TICK  # utime, stime, cutime, cstime


def children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


async def one_call(request: Request, temp: Path, forked: bool) -> tuple[float, float]:
    sql_worker.FORK = forked
    cpu = forker_cpu() if forked else children_cpu()
    start = time.perf_counter()
    try:
        await sql_worker.run_in_worker(request, temp)
    except sql_worker.WorkerFailed:
        pass
    wall = time.perf_counter() - start
    used = (forker_cpu() if forked else children_cpu()) - cpu
    return wall, used


async def main(calls: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="memory-sql-bench-"))
    db = folder / "store.db"
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TABLE messages(id INTEGER PRIMARY KEY, conversation_id, role, content, tool_name, "
            "tool_call_id, model, status, created_at)"
        )
        connection.executemany(
            "INSERT INTO messages(role, content) VALUES ('user', ?)", [(f"m{i}",) for i in range(500)]
        )
    requests = {
        "SQLite": Request(str(db), "SELECT count(*) FROM messages WHERE content LIKE '%4%'", Limits(time_limit_s=60)),
        "PostgreSQL (refused connection)": Request(
            str(db),
            "SELECT 1",
            Limits(time_limit_s=60),
            postgres={"connect": {"host": "127.0.0.1", "port": 9, "dbname": "x", "connect_timeout": 5}, "where": "x"},
            runner="tui_agent.core.tools.pg_run",
            preload=("pglast.parser", "psycopg"),
        ),
    }
    for store, request in requests.items():
        sql_forked._FORKER = None  # the forker's start shows in the first forked call
        first = await one_call(request, folder / "tmp", True)
        seen: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(calls):
            for forked in (True, False):
                seen[forked].append(await one_call(request, folder / "tmp", forked))
        print(f"{store}: forker's first call {first[0] * 1000:.0f} ms, CPU {first[1] * 1000:.0f} ms")
        for forked, label in ((True, "forked"), (False, "program")):
            walls = [wall for wall, _ in seen[forked]]
            cpus = [cpu for _, cpu in seen[forked]]
            print(
                f"  {label:8} median {statistics.median(walls) * 1000:6.1f} ms wall, "
                f"{statistics.median(cpus) * 1000:6.1f} ms CPU ({calls} calls)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    asyncio.run(main(parser.parse_args().calls))
