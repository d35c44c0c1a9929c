"""Benchmark: `tui-agent --help` wall time, and `tui-agent ask` start -> first request at a local server.

Usage: python bench/bench_cli.py [--runs N]. Reports medians; not a test.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI


def tui_agent() -> list[str]:
    found = shutil.which("tui-agent")
    return [found] if found else [sys.executable, "-m", "tui_agent"]


def bench_help(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([*tui_agent(), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def bench_ask(runs: int) -> list[float]:
    fake = FakeOpenAI().start()
    vault = Path(tempfile.mkdtemp()) / "vault"
    subprocess.run(
        [*tui_agent(), "profile", "set", "base_url", fake.base_url, "--vault", str(vault)],
        check=True,
        capture_output=True,
    )
    times = []
    for _ in range(runs):
        fake.first_request_at = None
        started = time.time()
        subprocess.run([*tui_agent(), "ask", "--vault", str(vault), "--new", "hi"], check=True, capture_output=True)
        assert fake.first_request_at is not None
        times.append(fake.first_request_at - started)
    fake.stop()
    shutil.rmtree(vault.parent)
    return times


def report(name: str, times: list[float]) -> None:
    print(
        f"{name:<40} median {statistics.median(times) * 1000:7.1f} ms   min {min(times) * 1000:7.1f} ms   runs {len(times)}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    report("tui-agent --help", bench_help(runs))
    report("tui-agent ask: start -> first request", bench_ask(runs))
