"""The search group's PostgreSQL side (issue 27): the same histories (tests/history_filler.py, the
same rows and ids) in a throwaway PostgreSQL cluster on loopback (tests/pg_cluster.py; fsync off,
as in the tests), filled with COPY and the search index built once. Per size: the first page from
the CLI (start-up included, ``$TUI_AGENT_DB`` naming the database), the first page's query alone
(in process, a connection of its own) and the palette (last key → first hit drawn)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import pg_cluster
from history_filler import fill_history_pg


def start() -> pg_cluster.Cluster:
    return pg_cluster.start_cluster()


def database_for(cluster: pg_cluster.Cluster, messages: int) -> tuple[str, float]:
    """A new database of ``messages`` messages (schema migrated, then filled): its URL and the fill's seconds."""
    import psycopg

    from tui_agent.core.store import pg_migrations

    name = f"history_{messages}"
    with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = cluster.url(name)
    with psycopg.connect(url, autocommit=True) as conn:
        pg_migrations.migrate(conn)
    started = time.perf_counter()
    fill_history_pg(url, messages, largest=messages // 5)
    return url, time.perf_counter() - started


def in_process(url: str, query: str, repeats: int = 5) -> float:
    """The first page's query alone: the median of ``repeats`` after a first one."""
    from tui_agent.core.store import location, search_pg

    conn = search_pg.connect(location.parse(url))
    try:
        search_pg.search_page(conn, query)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            search_pg.search_page(conn, query)
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    finally:
        conn.close()


def size_mb(url: str) -> float:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return float(row[0]) / 1e6 if row else 0.0


def _ms(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values) * 1000:.{digits}f}"


def _side(pg: dict[str, Any], sqlite: dict[str, Any], key: str, names: tuple[str, ...], digits: int = 0) -> str:
    """PostgreSQL's medians, then SQLite's in brackets."""
    ours = " / ".join(_ms(pg[key][q], digits) for q in names)
    theirs = " / ".join(_ms(sqlite[key][q], digits) for q in names)
    return f"{ours} ms (SQLite {theirs})"


def rows(results: dict[int, dict[str, Any]], queries: tuple[str, ...], palette: tuple[str, ...]) -> list[str]:
    """Rows of the main table: PostgreSQL next to SQLite, size by size."""
    lines = []
    for messages, r in results.items():
        pg = r.get("pg")
        if not pg:
            continue
        head = f"| history of {messages:,} messages, PostgreSQL ({pg['db_mb']:.0f} MB, filled in {pg['fill_s']:.0f} s):"
        lines += [
            f"{head} search, first page from the CLI, start-up included: {' / '.join(queries)}"
            f" | {_side(pg, r, 'cli', queries)} | — | ≤ 300 ms |",
            f"{head} search, the first page's query alone (in process): {' / '.join(queries)}"
            f" | {_side(pg, r, 'query', queries, 1)} | — | flat |",
            f"{head} search in the palette, last key → first hit drawn: {' / '.join(palette)}"
            f" | {_side(pg, r, 'palette', palette)} | — | ≤ 150 ms |",
        ]
    return lines
