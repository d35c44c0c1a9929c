"""A long history (issue 30): 5,000, 100,000 and 1,000,000 messages in conversations of 250, the
oldest conversation a fifth of them. Per size: the first paint and RSS, the first paint opening the
largest conversation, the first page of a search from the CLI (start-up included) and in the app's
palette (from the last key typed to the first hit drawn), and a context build.

The vaults are built once into bench/.cache (the 1,000,000 in about a minute) and reused."""

from __future__ import annotations

import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import scenarios as sc
from pty_app import READY, PtyApp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from history_filler import fill_history

CACHE = Path(__file__).resolve().parent / ".cache"
SIZES = (5_000, 100_000, 1_000_000)
# In every message / one in 1,000 / one in 100,000 / a phrase of two words that are in every
# message and never in that order (the walk's slowest case).
QUERIES = ("lorem", "quasar", "kumquat", '"ipsum lorem"')
PALETTE_QUERIES = ("lorem", "quasar")


def vault_for(messages: int, base_url: str) -> Path:
    """The cached vault of ``messages`` messages (built the first time), pointed at ``base_url``."""
    vault = CACHE / f"history-{messages}" / "vault"
    done = vault.parent / "built"
    if not done.exists():
        print(f"building a {messages:,}-message vault in {vault} (once)", flush=True)
        subprocess.run(["rm", "-rf", str(vault.parent)], check=True)
        _profile(vault, base_url)
        started = time.perf_counter()
        fill_history(vault / "agent.db", messages, largest=messages // 5)
        done.write_text(f"{time.perf_counter() - started:.1f} s\n")
    _profile(vault, base_url)
    return vault


def _profile(vault: Path, base_url: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [sys.executable, "-m", "tui_agent", "profile", "set", "base_url", base_url, "--vault", str(vault)],
        check=True,
        capture_output=True,
        env={**os.environ, **(env or {})},
    )


def _open_next(vault: Path, conversation_id: int | None) -> None:
    """Which conversation the app opens at start: the newest (None) or this one."""
    with sqlite3.connect(vault / "agent.db") as conn:
        conn.execute("DELETE FROM settings WHERE key = 'last_conversation'")
        if conversation_id is not None:
            conn.execute("INSERT INTO settings(key, value) VALUES ('last_conversation', ?)", (str(conversation_id),))


def cli(vault: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """``tui-agent ARGS``: wall-clock seconds and the process's CPU seconds (less moved by a busy host)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    argv = [sys.executable, "-m", "tui_agent", "--vault", str(vault), *args]
    subprocess.run(argv, capture_output=True, check=False, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def in_process(vault: Path, query: str, repeats: int = 5) -> float:
    """The first page's query alone (no start-up): the median of ``repeats`` after a first one."""
    from tui_agent.core.store.search import search_page

    conn = sqlite3.connect(vault / "agent.db")
    try:
        search_page(conn, query)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            search_page(conn, query)
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    finally:
        conn.close()


def palette_search(vault: Path, query: str, env: dict[str, str] | None = None) -> float:
    """Ctrl+P, then the query typed a key every 80 ms: the last key → the first hit drawn."""
    app = PtyApp.agent(vault, env)
    try:
        app.wait_for(READY)
        app.drain(1.0)
        app.send(b"\x10")
        app.wait_for(b"Search for commands")
        app.drain(0.3)
        for key in query[:-1]:
            app.send(key.encode())
            app.drain(0.08)
        started = time.perf_counter()
        app.send(query[-1].encode())
        return app.wait_for(f"[{query}]".encode(), timeout=30) - started
    finally:
        app.close()


def context_build(vault: Path, conversation_id: int, repeats: int = 5) -> float:
    """The request for one conversation, built in this process (the median after a first build)."""
    code = (
        "import statistics, sys, time\n"
        "from pathlib import Path\n"
        "from tui_agent.core import profiles\n"
        "from tui_agent.core.context import ContextBuilder\n"
        "from tui_agent.core.store import open_database\n"
        "from tui_agent.core.vault import Vault\n"
        "vault = Vault(Path(sys.argv[1]))\n"
        "open_database(vault.db_path)\n"
        "profile = profiles.active_profile()\n"
        "builder = ContextBuilder(vault)\n"
        "builder.build(int(sys.argv[2]), profile)\n"
        "times = []\n"
        f"for _ in range({repeats}):\n"
        "    started = time.perf_counter()\n"
        "    builder.build(int(sys.argv[2]), profile)\n"
        "    times.append(time.perf_counter() - started)\n"
        "print(statistics.median(times))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(vault), str(conversation_id)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    return float(out.stdout.strip())


def measure(
    base_url: str, runs: int, sizes: tuple[int, ...] = SIZES, pg_sizes: tuple[int, ...] = SIZES
) -> dict[int, dict[str, Any]]:
    import history_scale_pg

    results: dict[int, dict[str, Any]] = {}
    cluster = history_scale_pg.start() if pg_sizes else None
    try:
        for messages in sizes:
            results[messages] = _measure_size(base_url, runs, messages)
            if cluster is not None and messages in pg_sizes:
                results[messages]["pg"] = _measure_pg(cluster, base_url, runs, messages)
    finally:
        if cluster is not None:
            cluster.remove()
    return results


def _measure_pg(cluster: Any, base_url: str, runs: int, messages: int) -> dict[str, Any]:
    """The PostgreSQL side of one size, right after SQLite's (the same rows)."""
    import history_scale_pg

    print(f"{messages:,} messages on PostgreSQL: filling", flush=True)
    url, fill_s = history_scale_pg.database_for(cluster, messages)
    vault = vault_for(messages, base_url)
    env = {"TUI_AGENT_DB": url}
    _profile(vault, base_url, env)
    pg: dict[str, Any] = {"db_mb": history_scale_pg.size_mb(url), "fill_s": fill_s, "cli": {}, "query": {}}
    pg["palette"] = {}
    print(f"  filled in {fill_s:.0f} s ({pg['db_mb']:.0f} MB)", flush=True)
    for _ in range(runs):
        for query in QUERIES:
            pg["cli"].setdefault(query, []).append(cli(vault, "history", "search", query, env=env)[0])
            pg["query"].setdefault(query, []).append(history_scale_pg.in_process(url, query))
        for query in PALETTE_QUERIES:
            pg["palette"].setdefault(query, []).append(palette_search(vault, query, env))
    return pg


def _measure_size(base_url: str, runs: int, messages: int) -> dict[str, Any]:
    vault = vault_for(messages, base_url)
    with sqlite3.connect(vault / "agent.db") as conn:
        newest = conn.execute("SELECT max(id) FROM conversations").fetchone()[0]
        size_mb = (vault / "agent.db").stat().st_size / 1e6
    r: dict[str, Any] = {"db_mb": size_mb, "paint": [], "rss": [], "largest": [], "help": [], "cli": {}}
    r |= {"cpu": {}, "palette": {}, "query": {}}
    print(f"{messages:,} messages ({size_mb:.0f} MB)", flush=True)
    for _ in range(runs):
        _open_next(vault, None)
        paint, rss = sc.paint(PtyApp.agent(vault))
        r["paint"].append(paint)
        r["rss"].append(rss)
        _open_next(vault, 1)
        r["largest"].append(sc.paint(PtyApp.agent(vault))[0])
        _open_next(vault, None)
        r["help"].append(cli(vault, "--help")[0])
        for query in QUERIES:
            wall, cpu = cli(vault, "history", "search", query)
            r["cli"].setdefault(query, []).append(wall)
            r["cpu"].setdefault(query, []).append(cpu)
            r["query"].setdefault(query, []).append(in_process(vault, query))
        for query in PALETTE_QUERIES:
            r["palette"].setdefault(query, []).append(palette_search(vault, query))
    r["context"] = (context_build(vault, newest), context_build(vault, 1))
    return r


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f}"


def rows(results: dict[int, dict[str, Any]]) -> list[str]:
    """Rows of the main table (their figure starts with "history of": the group "search")."""
    lines = []
    for messages, r in results.items():
        head = f"| history of {messages:,} messages ({r['db_mb']:.0f} MB):"
        cli = " / ".join(ms(r["cli"][q]) for q in QUERIES)
        cpu = " / ".join(ms(r["cpu"][q]) for q in QUERIES)
        alone = " / ".join(f"{statistics.median(r['query'][q]) * 1000:.1f}" for q in QUERIES)
        palette = " / ".join(ms(r["palette"][q]) for q in PALETTE_QUERIES)
        lines += [
            f"{head} first paint; RSS | {statistics.median(r['paint']):.3f} s; {statistics.median(r['rss']):.0f} MB"
            " | — | flat |",
            f"{head} first paint opening the largest conversation ({messages // 5:,} messages)"
            f" | {statistics.median(r['largest']):.3f} s | — | flat |",
            f"{head} search, first page from the CLI, start-up included: {' / '.join(QUERIES)}; CPU;"
            f" `--help` in the same runs | {cli} ms; CPU {cpu} ms; {ms(r['help'])} ms | — | ≤ 300 ms |",
            f"{head} search, the first page's query alone (in process): {' / '.join(QUERIES)} | {alone} ms | — | flat |",
            f"{head} search in the palette, last key → first hit drawn: {' / '.join(PALETTE_QUERIES)}"
            f" | {palette} ms | — | ≤ 150 ms |",
            f"{head} context build, newest / largest conversation | {r['context'][0] * 1000:.1f} /"
            f" {r['context'][1] * 1000:.1f} ms | — | flat |",
        ]
    import history_scale_pg

    return lines + history_scale_pg.rows(results, QUERIES, PALETTE_QUERIES)
