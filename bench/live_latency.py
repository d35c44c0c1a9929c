"""A message from machine A on machine B's screen, on PostgreSQL over loopback:
`python bench/live_latency.py [--messages N]`.

Machine B is a real app in a 120x40 pty (its own vault folder) showing a conversation; machine A is
this process, storing messages into that conversation through the store's models (as `ask` or
another app would). Each figure is the time from A's commit to B's pty drawing the message (found
in B's output), messages 50-250 ms apart. Then a reply A keeps "streaming" (its row saved, as the
loop saves a running reply): the time until B draws it. PostgreSQL runs in a throwaway cluster
(tests/pg_cluster.py). Prints median / p95 / max. Not a test: no thresholds (the issue's: p95 < 1 s).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import pg_cluster  # noqa: E402
import scenarios as sc  # noqa: E402
from pg_vs_sqlite import set_profile  # noqa: E402
from pty_app import READY, PtyApp, make_vault  # noqa: E402


def listening(url: str, timeout: float = 30.0) -> None:
    """Until the app's listener is connected (its LISTEN in place: nothing announced before is seen)."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            found = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '%% listen'"
                " AND datname = current_database()"
            ).fetchone()
            if found and found[0]:
                return
            time.sleep(0.05)
    raise TimeoutError("the app never listened")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--replies", type=int, default=10, help="replies kept running on A, shown running on B")
    args = parser.parse_args()
    os.environ.pop("TUI_AGENT_DB", None)
    cluster = pg_cluster.start_cluster()
    fake = sc.FakeOpenAI().start()
    app: PtyApp | None = None
    vault: Path | None = None
    try:
        url = cluster.url(cluster.create_database())
        vault = make_vault(fake.base_url)
        set_profile(vault, fake.base_url, {"TUI_AGENT_DB": url})
        from tui_agent.core.store import history, location
        from tui_agent.core.store.db import open_store

        db = open_store(location.parse(url))
        conversation = history.new_conversation("live")
        history.add_message(conversation.id, "user", "the start")
        app = PtyApp.agent(vault, {"TUI_AGENT_DB": url})
        app.wait_for(READY)
        listening(url)
        app.drain(0.5)
        shown: list[float] = []
        for i in range(args.messages):
            marker = f"lv{i:04d}q"
            history.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", f"{marker} from A")
            committed = time.perf_counter()
            shown.append(app.wait_for(marker.encode(), timeout=30) - committed)
            time.sleep(random.uniform(0.05, 0.25))
        running: list[float] = []
        for i in range(args.replies):
            marker = f"rn{i:04d}q"
            row = history.add_message(conversation.id, "assistant", f"{marker} so far", status="streaming")
            committed = time.perf_counter()
            running.append(app.wait_for(marker.encode(), timeout=30) - committed)
            app.wait_for(b"on another machine", timeout=30)
            history.update_message(row, content=f"{marker} so far, and done", status="complete")
            app.wait_for(b"and done", timeout=30)
            time.sleep(random.uniform(0.05, 0.25))
        db.close()
    finally:
        if app is not None:
            app.close()
        fake.stop()
        cluster.remove()
        if vault is not None:
            shutil.rmtree(vault.parent, ignore_errors=True)
    print("\n| figure | median | p95 | max |\n|---|---|---|---|")
    for name, values in (
        (f"message from A on B's screen ({len(shown)} messages, s)", shown),
        (f"reply running on A shown on B ({len(running)} replies, s)", running),
    ):
        if values:
            print(f"| {name} | {statistics.median(values):.3f} | {percentile(values, 0.95):.3f} | {max(values):.3f} |")


if __name__ == "__main__":
    main()
