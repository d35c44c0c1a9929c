"""memory_sql stops in time, always: the statement runs in a worker process we can kill.

No stopwatches: a runaway query must end with a time-limit error and its worker process must be
gone; cancelling the awaiting task must kill the worker; temp files stay in the vault, bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from fake_openai import Reply
from memory_sql_helpers import exited
from pilot_helpers import running, until

from tui_agent.core import profiles
from tui_agent.core.store import history
from tui_agent.core.store.models import Message
from tui_agent.core.tools import memory_sql, sql_run, sql_worker
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.registry import default_registry
from tui_agent.core.tools.sql_run import Limits, Request

# Quadratic work inside ONE function call: SQLite's progress handler never runs in between.
INSTR_BOMB = "SELECT instr(printf('%.*c', 900000, 'a'), printf('%.*c', 300000, 'a') || 'b')"
LIKE_BOMB = "SELECT printf('%.*c', 900000, 'a') LIKE '%' || printf('%.*c', 1990, 'a') || 'b%'"
SPILLING_SORT = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 150000) "
    "SELECT i FROM (SELECT i, randomblob(300) AS b FROM r ORDER BY b LIMIT 1000000) "
    "WHERE instr(printf('%.*c', 900000, 'a'), printf('%.*c', 300000 + i % 2, 'a') || 'b') LIMIT 1"
)


@pytest.fixture
def worker_mode(request, monkeypatch) -> str:
    """memory_sql's workers forked from its forker (Linux) or started as programs (elsewhere, or
    when the forker cannot start)."""
    monkeypatch.setattr(sql_worker, "FORK", request.param == "forked")
    return request.param


both_ways = pytest.mark.parametrize("worker_mode", ["forked", "program"], indirect=True)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def pids(monkeypatch) -> list[int]:
    """Every worker PID memory_sql starts."""
    started: list[int] = []
    real = memory_sql.run_in_worker

    async def spy(request, temp_dir, on_start=None):
        return await real(request, temp_dir, on_start=started.append)

    monkeypatch.setattr(memory_sql, "run_in_worker", spy)
    return started


async def run(env, query):
    ctx = ToolContext(env.vault, env.reload_profile(), None)
    return await default_registry().execute("memory_sql", {"query": query}, ctx)


@pytest.mark.slow
@pytest.mark.parametrize("query", [INSTR_BOMB, LIKE_BOMB])
@both_ways
async def test_a_runaway_function_call_stops_at_the_deadline_and_its_worker_is_gone(
    worker_mode, env, pids, query, monkeypatch
):
    # 1 s for this test only: the other tests here get the tests' own 600 s (tests/conftest.py), so a
    # loaded machine never ends their quick query, or the sort before it spills, at the deadline.
    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 1.0)
    result = await run(env, query)
    assert result.error.startswith("stopped: the query ran longer than the 1s time limit"), result.error
    assert len(pids) == 1 and gone(pids[0])
    assert not sql_worker.RUNNING


async def test_a_long_like_pattern_is_refused(env, pids):
    result = await run(env, "SELECT 'a' LIKE printf('%.*c', 5000, '%')")
    assert result.error == "refused: a LIKE or GLOB pattern is longer than 2,000 bytes"
    result = await run(env, "SELECT 'abc' LIKE '%b%', 'abc' GLOB '*c'")
    assert result.data["rows"] == [[1, 1]]


@both_ways
async def test_cancelling_the_tool_kills_its_worker(worker_mode, env, pids):
    task = asyncio.create_task(run(env, INSTR_BOMB))
    while not pids:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(pids[0]) and not sql_worker.RUNNING


@both_ways
async def test_cancels_while_the_worker_is_killed_still_reap_it_and_clear_running(worker_mode, tmp_path, env):
    """A turn cancelled, then the app shut down: a second cancel lands in the wait for the kill."""
    started: list[int] = []
    # the vault's own database: one that cannot be opened is answered (an error) within milliseconds,
    # and a forked worker could answer before the first cancel (seen in CI)
    request = Request(db_path=str(env.vault.db_path), query=INSTR_BOMB, limits=Limits(time_limit_s=600.0))
    task = asyncio.create_task(sql_worker.run_in_worker(request, tmp_path / "tmp", on_start=started.append))
    while not started:
        await asyncio.sleep(0.01)
    assert not task.done(), task.result()
    while not task.done():  # cancelled at every turn, so also while it waits for the kill
        task.cancel()
        await asyncio.sleep(0)
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(400):
        if gone(started[0]) and not sql_worker.RUNNING:
            break
        await asyncio.sleep(0.05)
    assert gone(started[0]) and not sql_worker.RUNNING


@both_ways
async def test_a_killed_worker_leaves_nothing_in_the_vault_and_a_finished_one_neither(worker_mode, env, pids):
    """Each worker spills into a folder of its own, removed once it is reaped: a worker killed while
    SQLite had a spill file not yet unlinked (seen once under load) leaves nothing behind."""
    vault_tmp = memory_sql.temp_dir(env.vault)
    assert (await run(env, "SELECT 1")).is_ok
    assert list(vault_tmp.iterdir()) == []
    task = asyncio.create_task(run(env, INSTR_BOMB))
    while len(pids) < 2:
        await asyncio.sleep(0.01)
    (work,) = vault_tmp.iterdir()
    while Path(os.readlink(f"/proc/{pids[1]}/cwd")) != work.resolve():  # a forked worker moves there itself
        await asyncio.sleep(0.01)
    (work / "etilqs_left_behind").write_bytes(b"x" * 4096)  # as a spill file not yet unlinked
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(pids[1]) and list(vault_tmp.iterdir()) == []


@pytest.mark.parametrize("key", ["escape", "ctrl+q"])
@both_ways
async def test_escape_and_quit_in_the_app_kill_the_worker(worker_mode, env, pids, key):
    async with running(env, Reply(tool_calls=[("memory_sql", json.dumps({"query": INSTR_BOMB}))]), "Done.") as (
        app,
        pilot,
    ):
        app.conversation_view.composer.load_text("recall")
        await pilot.press("enter")
        await until(pilot, lambda: pids)
        assert pids
        await pilot.press(key)
        await until(pilot, lambda: gone(pids[0]) or not app.is_running)
    for _ in range(400):  # quit: the app's shutdown cancels the turn, which kills the worker
        if gone(pids[0]) and not sql_worker.RUNNING:
            break
        await asyncio.sleep(0.05)
    assert gone(pids[0]) and not sql_worker.RUNNING


@both_ways
async def test_a_big_sort_spills_into_the_vault_not_the_system_temp_dir(worker_mode, env, pids, monkeypatch, tmp_path):
    elsewhere = tmp_path / "system-tmp"
    elsewhere.mkdir()
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    monkeypatch.setenv("SQLITE_TMPDIR", str(elsewhere))
    vault_tmp = memory_sql.temp_dir(env.vault).resolve()
    task = asyncio.create_task(run(env, SPILLING_SORT))
    while not pids:
        await asyncio.sleep(0.01)
    seen: set[str] = set()
    while not task.done():
        fd_dir = Path(f"/proc/{pids[0]}/fd")
        try:
            for fd in fd_dir.iterdir():
                seen.add(os.readlink(fd))
        except OSError:
            pass
        # The spill file itself: the worker holds its own folder under vault_tmp open before it
        # spills (a loaded run stopped here on that folder, no spill file seen yet).
        if any("etilqs_" in target for target in seen):
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spilled = [target for target in seen if "etilqs_" in target]
    assert spilled and all(target.startswith(str(vault_tmp)) for target in spilled), seen
    # what was left, and where (failed once under two CPU burners, when this test's limit was 1 s)
    left = (sorted(elsewhere.iterdir()), sorted(vault_tmp.iterdir()), sorted(seen))
    assert list(elsewhere.iterdir()) == [] and list(vault_tmp.iterdir()) == [], left
    assert gone(pids[0])


@both_ways
async def test_temp_space_of_a_sort_is_bounded(worker_mode, env):
    limits = Limits(time_limit_s=60, temp_bytes=4 * 1024 * 1024, cache_kib=512)
    query = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 200000) "
        "SELECT count(*) FROM (SELECT randomblob(200) AS b FROM r ORDER BY b)"
    )
    answer = await sql_worker.run_in_worker(
        Request(str(env.vault.db_path), query, limits), memory_sql.temp_dir(env.vault)
    )
    assert answer == {"ok": False, "error": "stopped: the query needed more than 4 MB of temporary space; narrow it"}


@pytest.mark.slow
async def test_a_huge_update_is_counted_without_keeping_its_values(env):
    """3,000 new values of 60 KB would need 180 MB; the worker gets 150 MB of address space."""
    conversation = history.new_conversation("many")
    with Message._meta.database.atomic():
        for i in range(3000):
            history.add_message(conversation.id, "user", f"message {i}")
    limits = Limits(memory_bytes=150 * 1024 * 1024, heap_bytes=64 * 1024 * 1024, time_limit_s=60)
    query = "UPDATE messages SET content = printf('%.*c', 60000, 'x')"
    answer = await sql_worker.run_in_worker(
        Request(str(env.vault.db_path), query, limits), memory_sql.temp_dir(env.vault)
    )
    assert answer["ok"] and answer["count"] == 3000 and answer["updates"] == []
    assert len(answer["preview"]) == 5 and answer["preview"][0][4] == "x" * 200
    profiles.set_field(env.profile, "sql_update_approval", "auto")
    result = await run(env, query)
    assert result.error == (
        "refused: this UPDATE would change 3,000 messages; the limit is 50 per UPDATE "
        "(profile field sql_update_max_rows); narrow the WHERE clause. Nothing was changed"
    )
    assert Message.get_by_id(1).content == "message 0"


SECRET = "SECRET-MEMORY-ROW"
SLIPPING_PAST_THE_PRECHECK = [
    "WITH messages AS (SELECT * FROM main.messages) SELECT content FROM messages",
    "SELECT 1 WHERE EXISTS (WITH Messages AS (SELECT * FROM main.messages) SELECT 1 FROM messages WHERE role = 'x')",
    "UPDATE messages SET content = m.content FROM main.messages m WHERE m.role = 'memory_tool'",
    "UPDATE messages SET content = 'x' WHERE EXISTS (SELECT 1 FROM main.messages WHERE role = 'memory_tool')",
    "UPDATE messages SET content = (SELECT group_concat(content) FROM main.messages)",
]


@pytest.mark.parametrize("query", SLIPPING_PAST_THE_PRECHECK)
def test_the_authorizer_alone_still_hides_memory_rows(env, monkeypatch, query):
    """Defence in depth: with the token check switched off, SQLite's authorizer refuses them too."""
    conversation = history.new_conversation("c")
    history.add_message(conversation.id, "user", "hello")
    history.add_message(conversation.id, "memory_tool", SECRET, tool_name="memory_sql", tool_call_id="c1")
    monkeypatch.setattr(sql_run, "precheck", lambda sql, protected: None)
    answer = sql_run.run_guarded(Request(str(env.vault.db_path), query))
    assert answer["ok"] is False and answer["error"].startswith("refused: reading main.messages"), answer
    assert SECRET not in json.dumps(answer)


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    """Children first: memory_sql's forker, then the workers it forked."""
    found = _children(pid)
    for child in list(found):
        found += _descendants(child)
    return found


def has_open(pid: int, path: Path) -> bool:
    """The worker opened ``path`` itself (after exec: a forked child also holds its parent's files)."""
    try:
        if b"sql_worker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()[:400] + Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"


def dead_or_dying(pid: int) -> bool:
    """Gone, a zombie, or with SIGKILL already pending: it will not run another instruction of SQL."""
    try:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    except (OSError, ValueError):
        return gone(pid)
    pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
    try:
        flags = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[6])
    except (OSError, IndexError, ValueError):
        return gone(pid)
    exiting = bool(flags & 0x4)  # PF_EXITING: SIGKILL taken, the process is tearing down
    return status.get("State", "").startswith(("Z", "X")) or bool(pending & (1 << 8)) or exiting


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGKILL"])
def test_ctrl_c_or_a_killed_parent_leaves_no_worker_behind(env, signal_name):
    """`tui-agent tool memory_sql` on a runaway query: Ctrl+C ends the worker; so does killing the parent.

    Checked the moment the parent is gone (the forker) and the moment the forker has exited (the
    worker), long before the worker's own deadline could end it.
    """
    import signal
    import subprocess
    import sys
    import time

    if not Path("/proc/self/task").exists():
        pytest.skip("needs Linux /proc to find the worker process")
    vault = ["--vault", str(env.vault.root)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_agent", "tool", "memory_sql", json.dumps({"query": INSTR_BOMB}), *vault],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        workers: list[int] = []
        while not workers and proc.poll() is None:  # until the worker runs SQL (its set-up is done)
            workers = [pid for pid in _descendants(proc.pid) if has_open(pid, env.vault.db_path)]
        assert workers, "the tool ended before its worker started"
        forker = [pid for pid in _children(proc.pid) if pid not in workers]  # the worker's parent
        assert not any(dead_or_dying(pid) for pid in workers + forker)
        proc.send_signal(getattr(signal, signal_name))
        proc.wait(timeout=60)
        assert all(dead_or_dying(pid) for pid in forker), [_state(pid) for pid in forker]
        # a worker dies with the forker (its parent-death signal is sent as the forker exits)
        for _ in range(600):
            if all(exited(pid) for pid in forker):
                break
            time.sleep(0.05)
        assert all(dead_or_dying(pid) for pid in workers), [_state(pid) for pid in workers]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@both_ways
async def test_the_time_limit_counts_the_query_not_the_start_up(worker_mode, env, tmp_path, monkeypatch):
    """A loaded machine can take seconds to start an interpreter and import the runner: that is
    not the query's time. A worker whose start-up takes longer than the whole old deadline (the
    limit, the hard slack and five seconds for start-up) still answers a quick query; the limit
    starts at its READY line. (Under load 30 the PostgreSQL runner's imports alone crossed it, and
    every memory_sql call answered "stopped: the query ran longer than the 3s time limit".)
    The query's own limit is 2 s, not the product's speed: a loaded machine takes more than 0.5 s
    to open the store and write the answer (issue 38 item 2); the start-up still outlasts the old
    deadline."""
    slow_start = tmp_path / "slow-start"
    slow_start.mkdir()
    limits = Limits(time_limit_s=2.0)
    start_up_s = limits.time_limit_s + sql_worker.HARD_SLACK_S + 5.0 + 1.0
    (slow_start / "sitecustomize.py").write_text(f"import time\ntime.sleep({start_up_s})\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(slow_start), os.environ.get("PYTHONPATH", "")]))
    answer = await sql_worker.run_in_worker(
        Request(str(env.vault.db_path), "SELECT 41 + 1 AS answer", limits), memory_sql.temp_dir(env.vault)
    )
    assert answer["ok"] and answer["rows"] == [[42]], answer


def test_a_worker_loads_what_it_runs_not_the_parent_s_asyncio():
    """Each memory_sql call starts a worker: its start-up is paid at every call. The parent's side of
    the worker is written with asyncio (about half of the worker's start-up when it was loaded
    there too); the child's module loads the statement's runner and no event loop."""
    import subprocess
    import sys

    for module in ("sql_worker_child", "sql_worker_forker"):  # a worker started as a program; the forker
        shown = subprocess.run(
            [sys.executable, "-c", f"import sys, tui_agent.core.tools.{module}; print(sorted(sys.modules))"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        loaded = set(shown.stdout.strip().strip("[]").replace("'", "").split(", "))
        assert "tui_agent.core.tools.sql_run" in loaded
        assert not {"asyncio", "peewee", "tui_agent.core.tools.sql_worker"} & loaded, module
