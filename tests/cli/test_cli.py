"""The console script as a user runs it: ask, tool, profile, history."""

from __future__ import annotations

import json
import subprocess

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from fake_openai import Reply

pytestmark = BOTH_BACKENDS


def cli(*args, vault=None, check=False, env=None):
    argv = [*tui_agent_argv(), *args]
    if vault is not None:
        argv += ["--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=check, env=env)


def test_ask_streams_to_stdout_and_tools_to_stderr(env):
    env.fake.script(
        Reply(
            tool_calls=[
                ("generate_image", json.dumps({"prompt": "a boat", "path": "boats/b.png", "count": 1, "reason": "r"}))
            ]
        ),
        Reply(text="A small boat."),
    )
    result = cli("ask", "--new", "draw", "a", "boat", vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "A small boat.\n"
    assert "→ generate_image boats/b.png: a boat" in result.stderr
    assert "← generate_image: ok media/boats/b.png" in result.stderr
    assert "⇄ model vision-model (after the image tool)" in result.stderr
    assert env.fake.chat_requests[0]["messages"][-1]["content"] == "draw a boat"


@pytest.mark.slow
def test_ask_continues_the_last_conversation_unless_new(env):
    cli("ask", "one", vault=env.vault.root, check=True)
    cli("ask", "two", vault=env.vault.root, check=True)
    assert [m["content"] for m in env.fake.chat_requests[1]["messages"][1:]] == ["one", "ok", "two"]
    cli("ask", "--new", "three", vault=env.vault.root, check=True)
    assert len(env.fake.chat_requests[2]["messages"]) == 2
    result = cli("ask", "--conversation", "999", "x", vault=env.vault.root)
    assert result.returncode == 2 and result.stderr.strip() == "error: no conversation with id 999"


@pytest.mark.slow
def test_ask_errors_are_one_line_and_nonzero(env, tmp_path):
    vault = tmp_path / "fresh"
    result = cli("profile", "set", "base_url", "http://127.0.0.1:9/v1", vault=vault)
    assert result.returncode == 0
    result = cli("ask", "hello", vault=vault)
    assert result.returncode == 1
    assert (
        result.stderr.splitlines()[0]
        == "error: cannot reach http://127.0.0.1:9/v1: is the server running? (profile field base_url)"
    )
    assert result.stdout == ""
    result = cli("profile", "set", "api_key_env", "MY_MISSING_KEY", vault=vault)
    result = cli("ask", "hello", vault=vault)
    assert result.returncode == 1 and "MY_MISSING_KEY is not set" in result.stderr


def test_ask_refuses_sql_update_without_yes(env):
    env.fake.script(
        Reply(tool_calls=[("memory_sql", json.dumps({"query": "UPDATE messages SET content = 'x'"}))]),
        Reply(text="fine"),
    )
    result = cli("ask", "edit my history", vault=env.vault.root)
    assert result.returncode == 0
    assert "refused: pass --yes to approve" in result.stderr
    assert "declined" in env.fake.chat_requests[1]["messages"][-1]["content"]


@pytest.mark.slow
def test_tool_exit_codes(env):
    cat = '{"prompt": "a cat", "path": "cats/c.png", "count": 1, "reason": "r"}'
    ok = cli("tool", "generate_image", cat, vault=env.vault.root)
    assert ok.returncode == 0 and json.loads(ok.stdout) == {
        "status": "ok",
        "data": {"paths": ["media/cats/c.png"], "prompt": "a cat", "model": "flux2-test", "count": 1},
    }
    again = cli("tool", "generate_image", cat, vault=env.vault.root)  # the same path again
    assert again.returncode == 1 and json.loads(again.stdout) == {
        "status": "error",
        "error": "exists: media/cats/c.png",
    }
    unknown = cli("tool", "nope", "{}", vault=env.vault.root)
    assert unknown.returncode == 2 and "unknown tool 'nope'" in unknown.stderr
    bad_json = cli("tool", "memory_sql", "{not json", vault=env.vault.root)
    assert bad_json.returncode == 2 and "invalid JSON arguments for memory_sql" in bad_json.stderr
    missing = cli("tool", "generate_image", '{"prompt": "x", "reason": "r"}', vault=env.vault.root)
    assert missing.returncode == 2 and "missing parameter: path" in missing.stderr
    wrong_type = cli(
        "tool",
        "generate_image",
        '{"prompt": "x", "path": "a.png", "reason": "r", "count": "many"}',
        vault=env.vault.root,
    )
    assert wrong_type.returncode == 2 and "parameter count must be of type integer" in wrong_type.stderr


@pytest.mark.slow
@pytest.mark.sqlite_only("a new vault's first run: on PostgreSQL a new vault shares the env's database")
def test_profile_commands(env, tmp_path):
    vault = tmp_path / "v"
    created = cli("profile", "create", "work", vault=vault)
    assert created.returncode == 0
    listing = cli("profile", "list", vault=vault).stdout
    assert "* default" in listing and "  work" in listing
    assert cli("profile", "use", "work", vault=vault).returncode == 0
    assert "* work" in cli("profile", "list", vault=vault).stdout
    bad = cli("profile", "set", "--profile", "default", "temperature", "9", vault=vault)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: temperature: must be between 0 and 2, got 9.0"
    good = cli("profile", "set", "--profile", "default", "temperature", "0.2", vault=vault)
    assert good.stdout.strip() == "default.temperature = 0.2"
    shown = cli("profile", "show", "default", vault=vault).stdout
    assert "temperature: 0.2" in shown and "vision_model: qwen2.5vl" in shown
    missing = cli("profile", "show", "ghost", vault=vault)
    assert missing.returncode == 2 and "no profile named 'ghost'" in missing.stderr


def test_first_run_uses_openai_env(tmp_path):
    import os

    environ = dict(os.environ, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:1234/v1")
    shown = cli("profile", "show", vault=tmp_path / "v", env=environ).stdout
    assert "base_url: http://127.0.0.1:1234/v1" in shown and "api_key_env: OPENAI_API_KEY" in shown
    assert "sk-test" not in shown


def test_huge_message_is_refused_with_a_clear_error(env):
    argv = [*tui_agent_argv(), "ask", "--vault", str(env.vault.root), "-"]
    result = subprocess.run(argv, input="x" * 200_001, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "message too long (200,001 characters; the limit is 200,000)" in result.stderr
    assert env.fake.chat_requests == []
    piped = subprocess.run(argv, input="a message from a pipe", capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and env.fake.chat_requests[0]["messages"][-1]["content"] == "a message from a pipe"
