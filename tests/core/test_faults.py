"""Scripted faults: each ends in a clear error or a successful retry, nothing lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest
from fake_openai import Reply
from helpers import EchoTool, done, rows, run_turn
from pilot_helpers import eventually

from tui_agent.core import events as ev
from tui_agent.core import profiles
from tui_agent.core.tools.registry import ToolRegistry


def errors(events):
    return [e for e in events if isinstance(e, ev.ErrorEvent)]


async def test_429_then_success_is_retried_once_and_stored_once(env):
    env.fake.script(Reply(status=429, error_message="slow down"), Reply(text="after retry"))
    events = await run_turn(env, "hi")
    assert done(events).status == "complete"
    assert len(env.fake.chat_requests) == 2
    assert rows(env.vault.db_path, "SELECT role, content FROM messages") == [
        ("user", "hi"),
        ("assistant", "after retry"),
    ]


async def test_persistent_500_ends_in_a_clear_error(env):
    env.fake.script(*[Reply(status=500, error_message="boom") for _ in range(3)])
    events = await run_turn(env, "hi")
    assert done(events).status == "error"
    (error,) = errors(events)
    assert error.kind == "server" and "server error (500)" in error.message and "boom" in error.message
    assert len(env.fake.chat_requests) == 3
    stored = rows(env.vault.db_path, "SELECT role, status FROM messages")
    assert stored == [("user", "complete"), ("error", "error")]


async def test_malformed_tool_arguments_become_a_tool_error_and_the_model_continues(env):
    env.fake.script(
        Reply(tool_calls=[("echo", '{"text": "unterminated')]), Reply(text="Sorry, retrying is not needed.")
    )
    events = await run_turn(env, "go", registry=ToolRegistry([EchoTool()]))
    assert done(events).status == "complete"
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.result.status == "error" and "invalid JSON arguments for echo" in finished.result.error
    follow_up = env.fake.chat_requests[1]["messages"][-1]
    assert follow_up["role"] == "tool" and "invalid JSON" in follow_up["content"]


async def test_unknown_tool_is_reported_to_the_model(env):
    env.fake.script(Reply(tool_calls=[("rm_rf", "{}")]), Reply(text="ok"))
    events = await run_turn(env, "go", registry=ToolRegistry([EchoTool()]))
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert "unknown tool: 'rm_rf'" in finished.result.error
    assert done(events).status == "complete"


async def test_connection_dropped_mid_stream_keeps_partial_reply_without_duplicates(env):
    env.fake.script(Reply(text="partial answer that never ends " * 4, chunk_size=5, drop_after_chunks=4))
    events = await run_turn(env, "hi")
    assert done(events).status == "error"
    (error,) = errors(events)
    assert "broke off" in error.message and "closed before the reply was complete" in error.message
    assert len(env.fake.chat_requests) == 1  # text was already shown: no silent retry
    stored = rows(env.vault.db_path, "SELECT role, status, content FROM messages ORDER BY id")
    assert [r[:2] for r in stored] == [("user", "complete"), ("assistant", "error"), ("error", "error")]
    assert stored[1][2] == "partial answer "


@pytest.mark.slow
async def test_hang_times_out_with_a_clear_error(env):
    env.profile.request_timeout_s = 1
    env.profile.save()
    env.fake.script(*[Reply(text="late", hang_s=3) for _ in range(3)])
    events = await run_turn(env, "hi")
    (error,) = errors(events)
    assert error.kind == "timeout" and "did not answer within 1s" in error.message
    # The work, not the clock: one request, not waited out and not sent again (it went out, so it
    # may be billed), whatever the machine's speed.
    assert len(env.fake.chat_requests) == 1
    assert rows(env.vault.db_path, "SELECT role FROM messages") == [("user",), ("error",)]


async def test_unreachable_endpoint_names_the_url(env):
    profiles.set_field(env.profile, "base_url", "http://127.0.0.1:9/v1")  # written here: approved here
    from tui_agent.core.llm import LLMClient
    from tui_agent.core.loop import AgentLoop
    from tui_agent.core.tools.registry import default_registry

    loop = AgentLoop(
        env.vault, env.profile, default_registry(), client=LLMClient("http://127.0.0.1:9/v1", "k", backoff_s=0.01)
    )
    events = [e async for e in loop.run_turn(None, "hi")]
    (error,) = errors(events)
    assert error.message == "cannot reach http://127.0.0.1:9/v1: is the server running? (profile field base_url)"


async def test_bad_key_and_unknown_model(env, monkeypatch):
    from tui_agent.core.llm import LLMClient, LLMError, resolve_api_key

    env.fake.script(
        Reply(status=401, error_message="Incorrect API key"), Reply(status=404, error_message="model 'nope' not found")
    )
    client = LLMClient(env.fake.base_url, "wrong", api_key_env="MY_KEY", backoff_s=0.01)
    for expected in ("rejected the API key from MY_KEY", "model 'chat-model' not found at"):
        try:
            async for _ in client.stream(model="chat-model", messages=[{"role": "user", "content": "x"}]):
                pass
        except LLMError as exc:
            assert expected in str(exc)
        else:
            raise AssertionError("no error")
    await client.close()
    profiles.set_field(env.profile, "api_key_env", "MY_KEY")  # written here: approved here (core.approvals)
    try:
        resolve_api_key(env.profile)
    except LLMError as exc:
        assert "MY_KEY is not set (profile field api_key_env)" in str(exc)
    else:
        raise AssertionError("missing key accepted")
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert resolve_api_key(env.profile) == "sk-test"


@pytest.mark.slow
def test_sigkill_mid_stream_leaves_a_consistent_database(env, tmp_path):
    env.fake.script(Reply(text="word " * 400, chunk_size=5, chunk_delay_s=0.01))
    vault = str(env.vault.root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_agent", "ask", "--vault", vault, "--new", "remember this question"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    received = proc.stdout.read(40)
    assert received.startswith(b"word")

    def flushed() -> bool:  # at least one periodic flush of the partial reply is stored
        try:
            stored = rows(env.vault.db_path, "SELECT content FROM messages WHERE role = 'assistant'")
        except sqlite3.OperationalError:
            return False
        return bool(stored) and (stored[0][0] or "").startswith("word word")

    eventually(flushed, 60, "a periodic flush of the partial reply")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(env.vault.db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = conn.execute("SELECT role, status, content FROM messages ORDER BY id").fetchall()
    assert stored[0] == ("user", "complete", "remember this question")
    assert stored[1][0:2] == ("assistant", "streaming") and stored[1][2].startswith("word word")
    fts = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'remember'").fetchall()
    assert fts == [(1,)]
    conn.close()
    # The conversation goes on after the crash.
    env.fake.script(Reply(text="still here"))
    result = subprocess.run(
        [sys.executable, "-m", "tui_agent", "ask", "--vault", vault, "next"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "still here"
    body = env.fake.chat_requests[-1]["messages"]
    assert [m["role"] for m in body[1:]] == ["user", "assistant", "user"]
    assert json.dumps(body).count("remember this question") == 1


@pytest.mark.slow
def test_ctrl_c_during_ask_keeps_the_partial_reply_as_cancelled(env):
    # The reply stops after its tenth chunk until the Ctrl+C is sent: on a loaded machine the whole
    # reply could otherwise arrive before this test gets to send it.
    interrupted = threading.Event()
    env.fake.script(Reply(text="word " * 400, chunk_size=5, hold=interrupted, hold_after_chunks=10))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_agent", "ask", "--vault", str(env.vault.root), "--new", "interrupt me"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.read(20).startswith(b"word")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        interrupted.set()
    conn = sqlite3.connect(env.vault.db_path)
    stored = conn.execute("SELECT role, status, length(content) FROM messages ORDER BY id").fetchall()
    conn.close()
    assert stored[0][:2] == ("user", "complete")
    assert stored[1][:2] == ("assistant", "cancelled") and 0 < stored[1][2] < 2000


async def test_server_rejecting_stream_options_is_asked_again_without_them(env):
    env.fake.script(
        Reply(status=400, error_message="Unrecognized request argument supplied: stream_options"), Reply(text="fine")
    )
    events = await run_turn(env, "hi")
    assert done(events).status == "complete"
    first, second = env.fake.chat_requests
    assert "stream_options" in first and "stream_options" not in second
