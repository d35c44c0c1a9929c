"""The memory_sql worker: one statement runs in its own process, which we can always kill.

SQLite cannot interrupt a single long function call (a LIKE, GLOB or instr over megabytes runs
for minutes between two progress-handler calls), so the statement runs in a child process: forked
from memory_sql's forker on Linux (``sql_forked``), else ``python -m
tui_agent.core.tools.sql_worker_child``, which reads one JSON request on stdin; both write one
JSON answer on stdout. The child limits itself (SQLite limits, a soft deadline through the progress
handler, SIGALRM as a hard deadline, address-space and file-size rlimits, death with its
parent); the parent kills it on its own deadline and whenever the awaiting task is cancelled.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tui_agent.core.tools import sql_forked, sql_worker_child
from tui_agent.core.tools.sql_run import Request
from tui_agent.core.tools.sql_worker_child import HARD_SLACK_S, READY

Worker = asyncio.subprocess.Process | sql_forked.ForkedWorker

#: PIDs of running workers (tests check that a cancelled or timed-out worker is gone).
RUNNING: set[int] = set()
#: Waits for killed workers whose caller was cancelled before they were reaped (held until done).
_REAPING: set[asyncio.Future[int]] = set()
#: Seconds the worker may take to start (interpreter and imports): not the query's time, which is
#: counted from the worker's READY line on, so a loaded machine does not cut a query short.
START_TIMEOUT_S = 60.0
#: Seconds the parent waits beyond the worker's own hard deadline (writing the answer).
ANSWER_SLACK_S = 2.0
#: Workers forked from memory_sql's forker where it runs (``sql_forked``); False: each one started
#: as a program (the tests run both).
FORK = True
_PASSED_ENV = frozenset({"PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANG", "LC_ALL", "LC_CTYPE", "HOME"})


class WorkerFailed(Exception):
    """The worker died, ran out of time or answered nonsense; the text says why in words."""

    def __init__(self, reason: str, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


async def run_in_worker(
    request: Request, temp_dir: Path, on_start: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Run the request in a fresh worker; kill it on the deadline or when this task is cancelled."""
    temp_dir.mkdir(parents=True, exist_ok=True)
    # A folder of its own, removed once the worker is reaped: a worker killed while SQLite had a
    # spill file open but not yet unlinked leaves nothing behind in the vault.
    work = Path(tempfile.mkdtemp(prefix="worker-", dir=temp_dir))
    # no API keys; libpq's own PG* variables (PGPASSFILE, PGSSLMODE...) for a PostgreSQL store
    env = {key: value for key, value in os.environ.items() if key in _PASSED_ENV or key.startswith("PG")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    raw = {
        "db_path": request.db_path,
        "query": request.query,
        "limits": asdict(request.limits),
        "postgres": request.postgres,  # never in an argument: a password never shows in the process list
        "runner": request.runner,
        "preload": list(request.preload),
    }
    try:
        proc = await _start(raw, work, env)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    RUNNING.add(proc.pid)
    try:
        if on_start is not None:
            on_start(proc.pid)
        out, err = await _exchange(proc, request.limits.time_limit_s + HARD_SLACK_S + ANSWER_SLACK_S)
    finally:
        await _end(proc, work)
    if proc.returncode != 0 or not out:
        if proc.returncode == -signal.SIGALRM:  # its own hard deadline (sql_worker_child._limit_process)
            raise WorkerFailed("the query worker hit its hard deadline and was ended", timed_out=True)
        if proc.returncode == -signal.SIGKILL:  # not ours: our kills on a deadline or a cancel end above
            raise WorkerFailed(
                "the query worker was killed from outside before its deadline (its forker or the app "
                "ended, or the system ran short of memory)"
            )
        detail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise WorkerFailed(f"the query worker stopped unexpectedly ({detail[0][:200]})")
    try:
        answer = json.loads(out)
    except ValueError:
        raise WorkerFailed("the query worker gave an unreadable answer") from None
    if not isinstance(answer, dict):
        raise WorkerFailed("the query worker gave an unreadable answer")
    return answer


async def _start(raw: dict[str, Any], work: Path, env: dict[str, str]) -> Worker:
    """Fork the worker from the forker where it runs (Linux), else start it as a program."""
    modules = sql_worker_child.modules(raw)
    if sql_forked.AVAILABLE and FORK and modules is not None:
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                return await sql_forked.spawn(raw, modules, work, env)
        except TimeoutError:
            raise WorkerFailed(f"the query worker did not start within {START_TIMEOUT_S:g}s") from None
        except (OSError, sql_forked.ForkerGone):
            pass  # started as a program below, which says what is wrong if it fails too
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tui_agent.core.tools.sql_worker_child",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(work),
        env={**env, "SQLITE_TMPDIR": str(work), "TMPDIR": str(work)},
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**raw, "parent": os.getpid()}).encode())  # on stdin, as the forker's memfd
    try:
        await proc.stdin.drain()
    except ConnectionResetError:
        pass  # the worker died at once: its exit code and stderr say why
    proc.stdin.close()
    return proc


async def _end(proc: Worker, work: Path) -> None:
    """Kill the worker if it still runs; once it is reaped, it leaves ``RUNNING`` and its folder is
    removed, even if we are cancelled again.

    A second cancellation (a turn cancelled, then the app shutting down) interrupts the wait, not the
    reaping: the wait goes on in its own task, and its callbacks do the rest.
    """

    def ended(_: object = None) -> None:
        RUNNING.discard(proc.pid)
        if isinstance(proc, sql_forked.ForkedWorker):
            proc.close()
        shutil.rmtree(work, ignore_errors=True)

    if proc.returncode is not None:
        ended()
        return
    proc.kill()
    reaped = asyncio.ensure_future(proc.wait())
    _REAPING.add(reaped)
    reaped.add_done_callback(ended)
    reaped.add_done_callback(_REAPING.discard)
    await asyncio.shield(reaped)


async def _exchange(proc: Worker, deadline_s: float) -> tuple[bytes, bytes]:
    """Wait for READY (start-up), then at most ``deadline_s`` for the answer.

    ``asyncio.timeout``, not ``wait_for``: on Python 3.11 ``wait_for`` drops a cancellation that
    comes as the awaited read completes, and a cancelled turn then waited for the whole query."""
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())  # read all along: a full pipe would block the worker
    try:
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                first = await proc.stdout.readline()
        except TimeoutError:
            raise WorkerFailed(f"the query worker did not start within {START_TIMEOUT_S:g}s") from None
        if first != READY:
            await proc.wait()
            return first, await errors
        try:
            async with asyncio.timeout(deadline_s):
                out = await proc.stdout.read()
            async with asyncio.timeout(deadline_s):
                await proc.wait()
        except TimeoutError:
            raise WorkerFailed("the query worker missed its deadline and was ended", timed_out=True) from None
        return out, await errors
    finally:
        if not errors.done():
            errors.cancel()
