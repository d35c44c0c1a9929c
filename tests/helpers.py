"""Helpers shared by tests: running a turn, a simple test tool, reading the database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core.llm import LLMClient
from tui_agent.core.loop import AgentLoop
from tui_agent.core.store import backends
from tui_agent.core.store.models import Message
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry, default_registry


class EchoTool(Tool):
    name = "echo"
    role = "echo_tool"
    description = "Echo the text back."
    parameters = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Text to echo."}},
        "required": ["text"],
    }

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"echo": arguments["text"]})


def loopback_profile(name: str, base_url: str, request_timeout_s: int = 30) -> Any:
    """A profile whose models are served by a loopback server at ``base_url`` (no key). Tests that
    hold a reply (scripted ``hold``) wait on the app meanwhile: on a loaded CI machine that took
    more than 5 s, and the client's read timed out. A test of timeouts sets its own."""
    from tui_agent.core import profiles

    fields = {
        "base_url": base_url,
        "api_key_env": "",
        "chat_model": "chat-model",
        "vision_model": "vision-model",
        "image_model": "flux2-test",
        "request_timeout_s": request_timeout_s,
    }
    return profiles.create_profile(name, fields)


def make_loop(env: Any, registry: ToolRegistry | None = None, **kwargs: Any) -> AgentLoop:
    client = LLMClient(env.fake.base_url, "test-key", timeout=float(env.profile.request_timeout_s), backoff_s=0.01)
    return AgentLoop(env.vault, env.profile, registry or default_registry(), client=client, **kwargs)


async def on_loop(env: Any, call: Any, **kwargs: Any) -> list[Any]:
    """Every event of ``call(loop)`` (a turn, a regeneration...) on a fresh loop, closed after."""
    loop = make_loop(env, **kwargs)
    try:
        return [event async for event in call(loop)]
    finally:
        await loop.aclose()


async def run_turn(env: Any, text: str, conversation_id: int | None = None, **kwargs: Any) -> list[Any]:
    return await on_loop(env, lambda loop: loop.run_turn(conversation_id, text), **kwargs)


def reply_id(events: list[Any]) -> int:
    """The stored id of the turn's (first) finished reply."""
    return next(e for e in events if isinstance(e, ev.AssistantFinished)).message_id


def user_id(events: list[Any]) -> int:
    """The stored id of the turn's user message."""
    return next(e for e in events if isinstance(e, ev.TurnStarted)).user_message_id


async def first_turn(env: Any, text: str, *replies: Any) -> tuple[list[Any], int]:
    """``replies`` scripted (for this turn and later ones), then ``text`` as a new conversation's first
    turn: its events and the conversation's id."""
    env.fake.script(*replies)
    events = await run_turn(env, text)
    return events, done(events).conversation_id


def done(events: list[Any]) -> ev.Done:
    last = events[-1]
    assert isinstance(last, ev.Done), events
    return last


def rows(
    db_path: Path, sql: str = "SELECT id, role, content, status, model FROM messages ORDER BY id"
) -> list[tuple[Any, ...]]:
    """Rows of the test's store: the SQLite file, or the PostgreSQL database the models are bound to
    (BOTH_BACKENDS tests: tests/backends.py)."""
    database = Message._meta.database
    if database is not None and backends.of(database).shared:
        return [tuple(row) for row in backends.of(database).execute(sql).fetchall()]
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def settled(pilot: Any, condition: Any, timeout: float = 20.0) -> None:
    """Wait (pausing the app) until ``condition()`` holds: what the app reads or writes on the
    store's thread (issue 35) lands a few frames later, not within one pause."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not reached in {timeout} s: {condition}"
        await pilot.pause(0.02)


def forced_end(words: list[tuple[int, str, str | None]]) -> int:
    """What ui/lifeline's forced end writes for ``words`` (``(row id, text, reasoning)``), on a
    quick connection of its own to the bound store: the rows it cancelled."""
    from tui_agent.core.store import last_write

    store = last_write.bound_store()
    conn = last_write.connect_quickly(store)
    try:
        return last_write.cancel_on(conn, last_write.quick_param(store), words)
    finally:
        conn.close()


def http_get(url: str, **kwargs: Any) -> Any:
    """``httpx2.get`` with the run's TLS context (core/tls), as the app's own requests have it: each
    plain ``httpx2.get`` builds a context and loads the CA bundle again (~45 ms of CPU), for
    loopback ``http://`` URLs that never use it."""
    import httpx2

    from tui_agent.core import tls

    return httpx2.get(url, verify=tls.context(), **kwargs)
