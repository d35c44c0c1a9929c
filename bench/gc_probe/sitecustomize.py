"""Loaded by the app under bench (PYTHONPATH): when BENCH_GC_LOG names a file, every full collection
of the cycle collector is written there as "<time.perf_counter()> <milliseconds>" (the clock is the
system's monotonic one, so the bench can tell whether it fell inside a reply)."""

import gc
import os
import time

_path = os.environ.get("BENCH_GC_LOG")
if _path:
    _out = open(_path, "a", buffering=1)  # open for the process's life
    _started: list[float] = [0.0]

    def _log(phase: str, info: dict) -> None:
        if phase == "start":
            _started[0] = time.perf_counter()
        elif info["generation"] == 2:
            _out.write(f"{time.perf_counter():.4f} {(time.perf_counter() - _started[0]) * 1000:.1f}\n")

    gc.callbacks.append(_log)
