"""A store far away (issue 35): `tui-agent ask` and the app's first paint with a 60-message
conversation, on SQLite and on PostgreSQL direct and behind bench/delay_proxy.py adding 20 and 50 ms
a round trip: `python bench/far_store.py [--runs N] [--messages N]`.

PostgreSQL runs in a throwaway cluster (tests/pg_cluster.py) on this machine; the proxy is a
loopback one (nothing leaves the machine). The first paint is a real app in a 120x40 pty
(bench/pty_app.py). Prints a Markdown table for bench/RESULTS.md. Not a test: no thresholds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import pg_cluster  # noqa: E402
import scenarios as sc  # noqa: E402
from delay_proxy import DelayProxy  # noqa: E402
from pg_vs_sqlite import fill, set_profile  # noqa: E402
from pty_app import PtyApp, make_vault  # noqa: E402


def ask_seconds(vault: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tui_agent", "ask", "--vault", str(vault), "one more question"],
        check=True,
        capture_output=True,
        env={**os.environ, **env},
        timeout=120,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=60)
    args = parser.parse_args()
    os.environ.pop("TUI_AGENT_DB", None)
    cluster = pg_cluster.start_cluster()
    fake = sc.FakeOpenAI().start()
    figures: dict[tuple[str, str], list[float]] = {}
    setups = [("SQLite", None), ("PostgreSQL direct", 0.0), ("PostgreSQL +20 ms", 20.0), ("PostgreSQL +50 ms", 50.0)]
    try:
        for label, delay in setups:
            vault = make_vault(fake.base_url)
            if delay is None:
                url = f"sqlite://{vault / 'agent.db'}"
                served = url
            else:
                name = cluster.create_database()
                url = cluster.url(name)
                proxy = DelayProxy("127.0.0.1", cluster.port, delay).start()
                served = url.replace(f":{cluster.port}/", f":{proxy.port}/")
            set_profile(vault, fake.base_url, {"TUI_AGENT_DB": url})
            fill(url, vault, args.messages)
            env = {"TUI_AGENT_DB": served}
            for _ in range(args.runs):
                figures.setdefault((label, "ask"), []).append(ask_seconds(vault, env))
                painted, _ = sc.paint(PtyApp.agent(vault, env))
                figures.setdefault((label, "paint"), []).append(painted)
                print(label, {k[1]: round(v[-1], 3) for k, v in figures.items() if k[0] == label}, flush=True)
            shutil.rmtree(vault.parent, ignore_errors=True)
    finally:
        fake.stop()
        cluster.remove()
    print(f"\n| {args.messages}-message conversation | " + " | ".join(label for label, _ in setups) + " |")
    print("|---|" + "---|" * len(setups))
    for figure, title in (("ask", "`tui-agent ask` (s)"), ("paint", "app: start → first paint (s)")):
        cells = []
        for label, _ in setups:
            values = figures.get((label, figure), [])
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})" if values else "—")
        print(f"| {title} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
