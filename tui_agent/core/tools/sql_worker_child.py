"""The memory_sql worker's own side: ``python -m tui_agent.core.tools.sql_worker_child`` reads one
JSON request on stdin, limits itself, runs the statement and writes one JSON answer on stdout
(``sql_worker`` starts it and holds its deadline).

Apart from the parent's module so that a worker loads no more than it runs: the parent's side is
written with asyncio, whose import was half of a worker's start-up (about 90 ms of CPU on this
machine, at every memory_sql call)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

from tui_agent.core.tools.sql_run import Limits, Request

READY = b"ready\n"
#: Seconds the worker lives past its soft deadline before SIGALRM ends it.
HARD_SLACK_S = 1.0


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


def modules(raw: dict[str, Any]) -> list[str] | None:
    """The modules a request runs, the runner last; None if its runner is not one of the tool's own."""
    runner = str(raw.get("runner") or "tui_agent.core.tools.sql_run")
    if not runner.startswith("tui_agent.core.tools."):
        return None
    return [*(str(module) for module in raw.get("preload", ())), runner]


def main() -> int:
    return serve(json.loads(sys.stdin.buffer.read()))


def serve(raw: dict[str, Any]) -> int:
    """Run one request (read from stdin here, or handed over by ``sql_worker_forker``); the answer
    goes to stdout."""
    limits = Limits(**raw.get("limits", {}))
    names = modules(raw)
    if names is None:
        return 2  # only the tool's own runners
    runner = names[-1]
    for module in names:  # loaded before the deadlines start: they time the statement
        importlib.import_module(module)
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
