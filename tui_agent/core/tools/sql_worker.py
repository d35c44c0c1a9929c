"""The memory_sql worker: one statement runs in its own process, which we can always kill.

SQLite cannot interrupt a single long function call (a LIKE, GLOB or instr over megabytes runs
for minutes between two progress-handler calls), so the statement runs in a child process:
``python -m tui_agent.core.tools.sql_worker`` reads one JSON request on stdin and writes one JSON
answer on stdout. The child limits itself (SQLite limits, a soft deadline through the progress
handler, SIGALRM as a hard deadline, address-space and file-size rlimits, death with its
parent); the parent kills it on its own deadline and whenever the awaiting task is cancelled.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tui_agent.core.tools.sql_run import Limits, Request

#: PIDs of running workers (tests check that a cancelled or timed-out worker is gone).
RUNNING: set[int] = set()
#: Seconds the worker may take to start (interpreter and imports): not the query's time, which is
#: counted from the worker's READY line on, so a loaded machine does not cut a query short.
START_TIMEOUT_S = 60.0
#: Seconds the parent waits beyond the worker's own hard deadline (writing the answer).
ANSWER_SLACK_S = 2.0
READY = b"ready\n"
#: Seconds the worker lives past its soft deadline before SIGALRM ends it.
HARD_SLACK_S = 1.0
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
    # no API keys; libpq's own PG* variables (PGPASSFILE, PGSSLMODE...) for a PostgreSQL store
    env = {key: value for key, value in os.environ.items() if key in _PASSED_ENV or key.startswith("PG")}
    env.update(SQLITE_TMPDIR=str(temp_dir), TMPDIR=str(temp_dir), PYTHONDONTWRITEBYTECODE="1")
    payload = json.dumps(
        {
            "db_path": request.db_path,
            "query": request.query,
            "limits": asdict(request.limits),
            "parent": os.getpid(),
            "postgres": request.postgres,  # on stdin: a password never shows in the process list
            "runner": request.runner,
            "preload": list(request.preload),
        }
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tui_agent.core.tools.sql_worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(temp_dir),
        env=env,
    )
    RUNNING.add(proc.pid)
    try:
        if on_start is not None:
            on_start(proc.pid)
        out, err = await _exchange(proc, payload.encode(), request.limits.time_limit_s + HARD_SLACK_S + ANSWER_SLACK_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        RUNNING.discard(proc.pid)
    if proc.returncode != 0 or not out:
        if proc.returncode in (-14, -24, -9):  # SIGALRM (hard deadline), SIGXCPU, SIGKILL
            raise WorkerFailed("the query worker hit its hard deadline and was ended", timed_out=True)
        detail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise WorkerFailed(f"the query worker stopped unexpectedly ({detail[0][:200]})")
    try:
        answer = json.loads(out)
    except ValueError:
        raise WorkerFailed("the query worker gave an unreadable answer") from None
    if not isinstance(answer, dict):
        raise WorkerFailed("the query worker gave an unreadable answer")
    return answer


async def _exchange(proc: asyncio.subprocess.Process, payload: bytes, deadline_s: float) -> tuple[bytes, bytes]:
    """Send the request; wait for READY (start-up), then at most ``deadline_s`` for the answer."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())  # read all along: a full pipe would block the worker
    try:
        proc.stdin.write(payload)
        try:
            await proc.stdin.drain()
        except ConnectionResetError:
            pass  # the worker died at once: its exit code and stderr say why
        proc.stdin.close()
        try:
            first = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
        except TimeoutError:
            raise WorkerFailed(f"the query worker did not start within {START_TIMEOUT_S:g}s") from None
        if first != READY:
            await proc.wait()
            return first, await errors
        try:
            out = await asyncio.wait_for(proc.stdout.read(), deadline_s)
            await asyncio.wait_for(proc.wait(), deadline_s)
        except TimeoutError:
            raise WorkerFailed("the query worker missed its deadline and was ended", timed_out=True) from None
        return out, await errors
    finally:
        if not errors.done():
            errors.cancel()


def _limit_process(limits: Limits, parent: int | None) -> None:
    """Bounds of the child itself: hard deadline, memory, temp file size, die with the parent."""
    import resource
    import signal

    signal.setitimer(signal.ITIMER_REAL, limits.time_limit_s + HARD_SLACK_S)  # default action: terminate
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big temp file becomes a write error
    for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_FSIZE, limits.temp_bytes)):
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):  # some systems refuse RLIMIT_AS; the deadline still holds
            pass
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent is not None and os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def main() -> int:
    raw = json.loads(sys.stdin.buffer.read())
    limits = Limits(**raw.get("limits", {}))
    runner = str(raw.get("runner") or "tui_agent.core.tools.sql_run")
    if not runner.startswith("tui_agent.core.tools."):
        return 2  # only the tool's own runners
    for module in (*raw.get("preload", ()), runner):  # loaded before the deadlines start: they time the statement
        importlib.import_module(str(module))
    _limit_process(limits, raw.get("parent"))
    request = Request(str(raw["db_path"]), str(raw["query"]), limits, raw.get("postgres"), runner)
    run = importlib.import_module(runner).run_guarded
    sys.stdout.buffer.write(READY)  # the parent's clock starts here
    sys.stdout.buffer.flush()
    answer = run(request)
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
