"""Provider streams replayed through ``tui-agent ask --new`` as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_fork import tui_agent_argv
from helpers import loopback_profile
from sse_replay import ReplayServer

from tui_agent.core import profiles
from tui_agent.core.store import open_database
from tui_agent.core.vault import Vault


@pytest.fixture
def replay_vault(tmp_path: Path) -> Iterator[tuple[ReplayServer, Path]]:
    replay = ReplayServer().start()
    vault = Vault(tmp_path / "vault").init()
    db = open_database(vault.db_path)
    loopback_profile("replay", replay.base_url, 10)
    profiles.use_profile("replay")
    db.close()
    yield replay, vault.root
    replay.stop()


def ask(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "ask", "--new", *args, "--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def stored(vault: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(Vault(vault).db_path)
    try:
        return conn.execute("SELECT role, content, reasoning, status, tool_calls FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("fixture", "answer", "reasoning"),
    [
        ("deepseek_reasoning_content.sse", "9.8 is greater.", "9.11 vs 9.8: compare tenths, 1 < 8."),
        ("mistral_magistral_parts.sse", "The answer is 4.", "Two plus two is four."),
        ("together_think_tags.sse", "Hi there!", "The user says hi."),
    ],
)
@pytest.mark.slow
def test_ask_prints_the_answer_on_stdout_and_reasoning_on_stderr(replay_vault, fixture, answer, reasoning):
    replay, vault = replay_vault
    replay.script(fixture)
    result = ask(vault, "question")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == answer
    assert f"thinking: {reasoning}" in result.stderr
    assert "\x1b[" not in result.stderr  # not a terminal: no colour codes
    assert [(r[0], r[1], r[2], r[3]) for r in stored(vault)] == [
        ("user", "question", None, "complete"),
        ("assistant", answer, reasoning, "complete"),
    ]
    assert len(replay.requests) == 1


def test_ask_no_reasoning_hides_it(replay_vault):
    replay, vault = replay_vault
    replay.script("deepseek_reasoning_content.sse")
    result = ask(vault, "--no-reasoning", "question")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "9.8 is greater.\n"
    assert "compare tenths" not in result.stderr and "thinking" not in result.stderr
    assert stored(vault)[1][2] == "9.11 vs 9.8: compare tenths, 1 < 8."  # still stored


def test_ask_reasoning_is_dimmed_when_stderr_is_a_terminal(replay_vault):
    replay, vault = replay_vault
    replay.script("vllm_reasoning.sse")
    leader, follower = pty.openpty()
    argv = [*tui_agent_argv(), "ask", "--new", "hi", "--vault", str(vault)]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=follower, timeout=60, env={**os.environ})
    os.close(follower)
    captured = b""
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        captured += data
    os.close(leader)
    assert proc.returncode == 0
    assert proc.stdout == b"Hello!\n"
    assert b"\x1b[2mthinking: Greet back briefly.\x1b[0m" in captured


@pytest.mark.slow
def test_ask_runs_gemini_parallel_calls_and_sends_the_signature_back(replay_vault):
    replay, vault = replay_vault
    replay.script("gemini_no_index_signature.sse")
    result = ask(vault, "weather in Paris and London")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All done.\n"
    assert result.stderr.count("→ get_weather") == 2  # unknown to ask's tools: reported to the model
    rows = stored(vault)
    calls = json.loads(rows[1][4])
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"location": "Paris"}),
        ("get_weather", {"location": "London"}),
    ]
    assert len(replay.requests) == 2
    sent = next(m for m in replay.bodies[1]["messages"] if m.get("tool_calls"))["tool_calls"]
    assert sent[0]["extra_content"]["google"]["thought_signature"] == "CiQBVKhc7vB+sigA=="


def test_ask_unopened_think_keeps_reasoning_out_of_the_stored_answer(replay_vault):
    replay, vault = replay_vault
    replay.script("llamacpp_unopened_think.sse")
    result = ask(vault, "hello")
    assert result.returncode == 0, result.stderr
    assert "(the text above was the model's reasoning)" in result.stderr
    assert result.stdout.rstrip().endswith("Hello! How can I help?")
    assert [(r[1], r[2]) for r in stored(vault)][1] == ("Hello! How can I help?", "Okay, the user greets me.")


@pytest.mark.parametrize(
    ("fixtures", "requests", "message"),
    [
        (["err_gemini_list_400.json"], 1, 'Unknown name "reasoning": Cannot find field.'),
        (["err_html_502.html"] * 3, 3, "had a server error (502): 502 Bad Gateway"),
        (["vllm_midstream_validation_error.sse"], 1, "maximum context length is 32768 tokens"),
    ],
)
@pytest.mark.slow
def test_ask_errors_are_one_line_naming_the_servers_message(replay_vault, fixtures, requests, message):
    replay, vault = replay_vault
    replay.script(*fixtures)
    result = ask(vault, "hi")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert len(replay.requests) == requests
    assert all(r[3] != "streaming" for r in stored(vault))


@pytest.mark.slow
def test_ask_transient_midstream_error_keeps_the_partial_and_asks_once_more(replay_vault):
    replay, vault = replay_vault
    replay.script("openrouter_midstream_transient.sse")
    result = ask(vault, "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The first half of \nAll done.\n"
    assert "asking again" in result.stderr
    assert len(replay.requests) == 2
    assert [(r[0], r[1], r[3]) for r in stored(vault)] == [
        ("user", "hi", "complete"),
        ("assistant", "The first half of ", "error"),
        ("assistant", "All done.", "complete"),
    ]


@pytest.mark.slow
def test_ask_keeps_unicode_line_separators_in_the_answer_and_in_tool_arguments(replay_vault):
    """Raw U+2028/U+2029/U+0085 inside a chunk's JSON: the turn completes and stores them as sent."""
    replay, vault = replay_vault
    replay.script("unicode_line_breaks_text.sse")
    result = ask(vault, "--raw", "question")
    assert result.returncode == 0, result.stderr
    answer = "First line\u2028second line\u2029new paragraph\u0085next line."
    assert result.stdout == answer + "\n"
    assert "not JSON" not in result.stderr
    assert [(r[1], r[2], r[3]) for r in stored(vault)][1] == (answer, "Copied\u2028from the web.", "complete")

    replay.script("unicode_line_breaks_args.sse")
    result = ask(vault, "weather?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All done.\n"
    calls = json.loads(stored(vault)[3][4])
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"location": "Paris\u2028\u0085Île-de-France\u2029FR"})
    ]
