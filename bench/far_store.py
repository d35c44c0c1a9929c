"""A store far away (issue 35): with a 60-message conversation, on SQLite and on PostgreSQL direct
and behind bench/delay_proxy.py adding 20 and 50 ms a round trip, `python bench/far_store.py
[--runs N] [--messages N]` times

- `tui-agent ask` (a process: a new question in the last conversation, against the fake model);
- a real app's start -> first paint (120x40 pty, bench/pty_app.py);
- opening another conversation (pages.opened: what the app's worker does when one is chosen);
- sending a message, until the request to the model leaves (the profile read once a turn, the
  message stored, the context read: what the app's turn does before the request);

and the round trips each one paid on PostgreSQL (counted by the proxy: see its docstring; the
first paint's are those of the app's store connection by the time the paint was seen: the live
listener connects after it). PostgreSQL runs in a throwaway
cluster (tests/pg_cluster.py) on this machine; the proxy is a loopback one (nothing leaves the
machine). Prints a Markdown table for bench/RESULTS.md. Not a test: no thresholds.
"""

from __future__ import annotations

import argparse
import asyncio
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

FIGURES = (
    ("ask", "`tui-agent ask`"),
    ("paint", "app: start → first paint"),
    ("open", "open another conversation"),
    ("send", "send: Enter → request leaves"),
)


class Counter:
    def __init__(self, proxy: DelayProxy | None) -> None:
        self.proxy = proxy

    def now(self) -> int:
        return self.proxy.round_trips if self.proxy is not None else 0


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


def paint_seconds(vault: Path, env: dict[str, str], counter: Counter) -> tuple[float, int]:
    """Start -> first paint, and the round trips of the app's first connection (the store's: the
    live listener's, made right after the paint, is left out)."""
    proxy = counter.proxy
    known = len(proxy.clients) if proxy is not None else 0
    app = PtyApp.agent(vault, env)
    try:
        painted = app.wait_for(sc.READY)
        return painted - app.started, proxy.clients[known].waits if proxy is not None else 0
    finally:
        app.close()


def in_process(served: str, vault: Path, counter: Counter, runs: int) -> dict[str, list[tuple[float, int]]]:
    """Opening another conversation and sending a message, in this process through ``served``."""
    from tui_agent.core import approvals, llm
    from tui_agent.core.loop import AgentLoop
    from tui_agent.core.store import location, pages, worker
    from tui_agent.core.store.db import open_store
    from tui_agent.core.store.models import Conversation
    from tui_agent.core.tools.registry import default_registry
    from tui_agent.core.vault import Vault
    from tui_agent.ui.first_read import active_profile
    from tui_agent.ui.widgets.log_release import PAGE

    out: dict[str, list[tuple[float, int]]] = {"open": [], "send": []}

    async def measure() -> None:
        db = await worker.run(open_store, location.parse(served))
        profile = await worker.run(active_profile)  # the first paint read it (and the endpoint's quirks)
        await worker.run(approvals.approve, approvals.profile_items(profile))  # this store's name here
        ids = await worker.run(lambda: [c.id for c in Conversation.select(Conversation.id)])
        for run in range(runs):
            before, start = counter.now(), time.perf_counter()
            await worker.run(pages.opened, ids[run % len(ids)], PAGE)
            out["open"].append((time.perf_counter() - start, counter.now() - before))
        stream = llm.LLMClient.stream
        left: list[tuple[float, int]] = []
        for _ in range(runs):
            before, start = counter.now(), time.perf_counter()

            def leaving(self, *args, _b=before, _s=start, **kwargs):  # type: ignore[no-untyped-def]
                left.append((time.perf_counter() - _s, counter.now() - _b))
                return stream(self, *args, **kwargs)

            llm.LLMClient.stream = leaving  # type: ignore[method-assign]
            try:
                profile = await worker.run(active_profile)  # read once a turn (app.reload_profile)
                loop = AgentLoop(Vault(vault).init(), profile, default_registry())
                async for _event in loop.run_turn(ids[0], "one more"):
                    pass
                await loop.aclose()
            finally:
                llm.LLMClient.stream = stream  # type: ignore[method-assign]
            out["send"].append(left[-1])
        worker.close_connection(db)

    asyncio.run(measure())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=60)
    args = parser.parse_args()
    os.environ.pop("TUI_AGENT_DB", None)
    load = os.getloadavg()
    cluster = pg_cluster.start_cluster()
    fake = sc.FakeOpenAI().start()
    figures: dict[tuple[str, str], list[tuple[float, int]]] = {}
    setups = [("SQLite", None), ("PostgreSQL direct", 0.0), ("PostgreSQL +20 ms", 20.0), ("PostgreSQL +50 ms", 50.0)]
    try:
        for label, delay in setups:
            vault = make_vault(fake.base_url)
            proxy = None
            if delay is None:
                url = f"sqlite://{vault / 'agent.db'}"
                served = url
            else:
                name = cluster.create_database()
                url = cluster.url(name)
                proxy = DelayProxy("127.0.0.1", cluster.port, delay).start()
                served = url.replace(f":{cluster.port}/", f":{proxy.port}/")
            counter = Counter(proxy)
            set_profile(vault, fake.base_url, {"TUI_AGENT_DB": url})
            fill(url, vault, args.messages)
            fill(url, vault, args.messages)  # another conversation to open
            env = {"TUI_AGENT_DB": served}
            os.environ.update(env)
            for figure, values in in_process(served, vault, counter, args.runs).items():
                figures.setdefault((label, figure), []).extend(values)
            for _ in range(args.runs):
                before = counter.now()
                seconds = ask_seconds(vault, env)
                figures.setdefault((label, "ask"), []).append((seconds, counter.now() - before))
                figures.setdefault((label, "paint"), []).append(paint_seconds(vault, env, counter))
                print(label, {k[1]: v[-1] for k, v in figures.items() if k[0] == label}, flush=True)
            os.environ.pop("TUI_AGENT_DB", None)
            shutil.rmtree(vault.parent, ignore_errors=True)
    finally:
        fake.stop()
        cluster.remove()
    after = os.getloadavg()
    print(f"\nload average (1, 5, 15 min): before {load}, after {after}")
    print(f"\n| {args.messages}-message conversation | " + " | ".join(label for label, _ in setups) + " |")
    print("|---|" + "---|" * len(setups))
    for figure, title in FIGURES:
        cells = []
        for label, delay in setups:
            values = figures.get((label, figure), [])
            if not values:
                cells.append("—")
                continue
            seconds = [v[0] for v in values]
            trips = statistics.median(v[1] for v in values)
            cell = f"{statistics.median(seconds):.3f} ({min(seconds):.3f}–{max(seconds):.3f})"
            cells.append(cell + (f", {trips:g} round trips" if delay is not None else ""))
        print(f"| {title} (s) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
