"""The same figures on SQLite and on PostgreSQL over loopback, side by side in one run:
`python bench/pg_vs_sqlite.py [--runs N] [--turns N] [--messages N]`.

- open: a real app in a 120x40 pty opening a conversation of --messages messages (first paint);
- paging: PageUp from its end to its first message (per key, as scenarios.scroll_up);
- context: the context build of a 400-message window with 50 images (context_build.py);
- session: --turns turns in one sitting (scenarios.session): median turn, first and last 50.

PostgreSQL runs in a throwaway cluster (tests/pg_cluster.py) on this machine, each figure on a
fresh database. Prints a Markdown table (paste it into bench/RESULTS.md). Not a test: no thresholds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import context_build  # noqa: E402
import pg_cluster  # noqa: E402
import scenarios as sc  # noqa: E402
from pty_app import PtyApp, make_vault  # noqa: E402


def fill(url: str, vault: Path, messages: int) -> None:
    """One conversation of ``messages`` Markdown messages, written through the store's models."""
    from tui_agent.core.store import location
    from tui_agent.core.store.db import open_store
    from tui_agent.core.store.models import Conversation, Message

    db = open_store(location.parse(url))
    with db.atomic():
        conversation = Conversation.create(title="long", created_at="x", updated_at="x")
        rows = [
            {
                "conversation": conversation.id,
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i}: **lorem** ipsum `dolor` sit amet, " + "consectetur adipiscing elit " * 6,
                "created_at": "x",
            }
            for i in range(messages)
        ]
        for start in range(0, len(rows), 500):
            Message.insert_many(rows[start : start + 500]).execute()
    db.close()


def set_profile(vault: Path, base_url: str, env: dict[str, str]) -> None:
    """The loopback server in the store's profile (make_vault set it in the vault's own file)."""
    subprocess.run(
        [sys.executable, "-m", "tui_agent", "profile", "set", "base_url", base_url, "--vault", str(vault)],
        check=True,
        capture_output=True,
        env={**os.environ, **env},
    )


def store_url(backend: str, cluster: pg_cluster.Cluster, vault: Path) -> str:
    if backend == "sqlite":
        return f"sqlite://{vault / 'agent.db'}"
    return cluster.url(cluster.create_database())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--skip", default="", help="comma-separated: open, paging, context, session")
    args = parser.parse_args()
    os.environ.pop("TUI_AGENT_DB", None)  # each figure names its store itself
    skip = set(filter(None, args.skip.split(",")))
    cluster = pg_cluster.start_cluster()
    fake = sc.FakeOpenAI().start()
    figures: dict[tuple[str, str], list[float]] = {}

    def add(backend: str, name: str, value: float) -> None:
        figures.setdefault((backend, name), []).append(value)
        print(f"{backend:10} {name:28} {value:.4f}", flush=True)

    try:
        for run in range(args.runs):
            for backend in ("sqlite", "postgresql") if run % 2 == 0 else ("postgresql", "sqlite"):
                vault = make_vault(fake.base_url)  # the profile: in the vault's own file, then copied below
                url = store_url(backend, cluster, vault)
                env = {"TUI_AGENT_DB": url}
                set_profile(vault, fake.base_url, env)
                fill(url, vault, args.messages)
                if "open" not in skip:
                    painted, _ = sc.paint(PtyApp.agent(vault, env))
                    add(backend, f"open {args.messages:,} messages (s)", painted)
                if "paging" not in skip and run == 0:
                    paged = sc.scroll_up(vault, args.messages, env=env)
                    add(backend, "PageUp: median per key (s)", paged["median_s"])
                    add(backend, "PageUp: p95 per key (s)", paged["p95_s"])
                    add(backend, "PageUp: to the first (s)", paged["total_s"])
                if "context" not in skip:
                    fresh = None if backend == "sqlite" else cluster.url(cluster.create_database())
                    built = context_build.measure(url=fresh)
                    add(backend, "context 400: first build (s)", built["first_s"])
                    add(backend, "context 400: next builds (s)", built["again_s"])
                if "session" not in skip and run == 0 and args.turns:
                    session_vault = make_vault(fake.base_url)
                    session_url = store_url(backend, cluster, session_vault)
                    set_profile(session_vault, fake.base_url, {"TUI_AGENT_DB": session_url})
                    done = sc.session(session_vault, fake, args.turns, {"TUI_AGENT_DB": session_url})
                    add(backend, f"session {args.turns}: first 50 turns (s)", done["first_turns_s"])
                    add(backend, f"session {args.turns}: last 50 turns (s)", done["last_turns_s"])
                    add(backend, f"session {args.turns}: RSS (MB)", done["rss_mb"])
                    shutil.rmtree(session_vault.parent, ignore_errors=True)
                shutil.rmtree(vault.parent, ignore_errors=True)
    finally:
        fake.stop()
        cluster.remove()
    names = list(dict.fromkeys(name for _, name in figures))
    print("\n| figure | SQLite | PostgreSQL (loopback) | ratio |\n|---|---|---|---|")
    for name in names:
        lite, pg = figures.get(("sqlite", name), []), figures.get(("postgresql", name), [])
        if lite and pg:
            a, b = statistics.median(lite), statistics.median(pg)
            print(f"| {name} | {a:.4f} | {b:.4f} | {b / a:.2f}× |")


if __name__ == "__main__":
    main()
