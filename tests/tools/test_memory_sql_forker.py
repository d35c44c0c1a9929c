"""memory_sql's forker: one process per app that loaded the runner once and forks a worker for each
statement. Its workers carry nothing of the app's (no keys, no password in a process list), it is
replaced when it has gone, and a forker that cannot start leaves the call to a worker started as a
program."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from memory_sql_helpers import exited

from tui_agent.core.tools import memory_sql, sql_forked, sql_worker
from tui_agent.core.tools.sql_run import Limits, Request

# Quadratic work inside one function call: the worker lives until its deadline (or a kill).
INSTR_BOMB = "SELECT instr(printf('%.*c', 900000, 'a'), printf('%.*c', 300000, 'a') || 'b')"
SECRET_KEY = "sk-test-KEY-NEVER-IN-A-WORKER"
SECRET_PASSWORD = "pw-NEVER-IN-A-PROCESS-LIST"

pytestmark = pytest.mark.skipif(not sql_forked.AVAILABLE, reason="memory_sql's forker runs on Linux only")


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def shown(pid: int) -> bytes:
    """What another user of this machine can read of a process: its command line and environment
    (environment: the owner only, but the same rule)."""
    return Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()


async def ask(env, query: str, seen: list[int], time_limit_s: float = 600.0, **extra) -> dict:
    request = Request(str(env.vault.db_path), query, Limits(time_limit_s=time_limit_s), **extra)
    return await sql_worker.run_in_worker(request, memory_sql.temp_dir(env.vault), on_start=seen.append)


async def killed_while(env, seen: list[int], look, **extra) -> None:
    """Run a runaway statement, call ``look(pid)`` while its worker runs, then cancel it."""
    before = len(seen)
    task = asyncio.create_task(ask(env, INSTR_BOMB, seen, **extra))
    while len(seen) == before and not task.done():
        await asyncio.sleep(0.01)
    assert not task.done(), task.result()  # it ended before its worker started: why
    try:
        look(seen[-1])
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_every_worker_is_forked_by_the_same_forker_not_by_the_app(env):
    seen: list[int] = []
    parents: list[int] = []
    for _ in range(2):
        await killed_while(env, seen, lambda pid: parents.append(parent_of(pid)))
    assert len(set(seen)) == 2 and len(set(parents)) == 1 and parents[0] != os.getpid()
    assert b"tui_agent.core.tools.sql_worker_forker" in Path(f"/proc/{parents[0]}/cmdline").read_bytes()
    assert parent_of(parents[0]) == os.getpid()
    assert not sql_worker.RUNNING


@pytest.mark.parametrize("worker_mode", ["forked", "program"])
async def test_a_worker_and_its_forker_carry_no_key_and_show_no_password(env, monkeypatch, worker_mode):
    """The app's API keys stay out of the worker's environment; a PostgreSQL password reaches the
    worker through a pipe or a memfd, never its command line or environment."""
    monkeypatch.setattr(sql_worker, "FORK", worker_mode == "forked")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    seen: list[int] = []
    looked: list[bytes] = []

    def look(pid: int) -> None:
        looked.append(shown(pid))
        if worker_mode == "forked":
            looked.append(shown(parent_of(pid)))

    await killed_while(env, seen, look, postgres={"connect": {"password": SECRET_PASSWORD}})
    assert len(looked) == (2 if worker_mode == "forked" else 1)
    for text in looked:
        assert b"PATH=" in text  # the environment was read
        assert SECRET_KEY.encode() not in text and SECRET_PASSWORD.encode() not in text


async def test_a_forker_that_was_killed_is_replaced_at_the_next_call(env):
    seen: list[int] = []
    assert (await ask(env, "SELECT 1 AS one", seen))["rows"] == [[1]]
    forker = sql_forked._FORKER
    assert forker is not None
    forker.proc.kill()
    forker.proc.wait(timeout=60)
    assert (await ask(env, "SELECT 2 AS two", seen))["rows"] == [[2]]
    assert sql_forked._FORKER is not None and sql_forked._FORKER.proc.pid != forker.proc.pid


async def test_a_forker_that_left_when_idle_is_replaced_at_the_next_call(env, monkeypatch):
    monkeypatch.setattr(sql_forked, "IDLE_S", 0.2)
    monkeypatch.setattr(sql_forked, "_FORKER", None)  # one started with the short idle time
    seen: list[int] = []
    assert (await ask(env, "SELECT 1 AS one", seen))["rows"] == [[1]]
    forker = sql_forked._FORKER
    assert forker is not None
    assert forker.proc.wait(timeout=60) == 0  # it left by itself
    assert (await ask(env, "SELECT 2 AS two", seen))["rows"] == [[2]]
    assert sql_forked._FORKER is not None and sql_forked._FORKER.proc.pid != forker.proc.pid


async def test_a_killed_forker_takes_its_running_worker_with_it(env):
    seen: list[int] = []
    task = asyncio.create_task(ask(env, INSTR_BOMB, seen))
    while not seen:
        await asyncio.sleep(0.01)
    parent_of(seen[0])  # running
    forker = sql_forked._FORKER
    assert forker is not None
    forker.proc.kill()
    with pytest.raises(sql_worker.WorkerFailed, match="killed from outside before its deadline") as failed:
        await task  # the worker got its parent-death signal (SIGKILL), long before its deadline
    assert not failed.value.timed_out
    assert not sql_worker.RUNNING
    for _ in range(600):  # the worker got SIGKILL as the forker exited: gone, or a zombie
        if exited(seen[0]):
            break
        await asyncio.sleep(0.05)
    assert exited(seen[0])


async def test_a_forker_that_cannot_start_leaves_the_call_to_a_worker_started_as_a_program(env, monkeypatch):
    def cannot_start(self, env):
        raise OSError("no forker here")

    monkeypatch.setattr(sql_forked._Forker, "__init__", cannot_start)
    monkeypatch.setattr(sql_forked, "_FORKER", None)
    seen: list[int] = []
    parents: list[int] = []
    await killed_while(env, seen, lambda pid: parents.append(parent_of(pid)))
    assert parents == [os.getpid()]
    assert (await ask(env, "SELECT 3 AS three", seen))["rows"] == [[3]]


def test_the_forker_leaves_when_the_app_closes_its_end(env):
    async def one() -> None:
        await ask(env, "SELECT 1", [])

    asyncio.run(one())
    forker = sql_forked._FORKER
    assert forker is not None
    sql_forked._FORKER = None
    forker.close()
    assert forker.proc.wait(timeout=60) == 0
