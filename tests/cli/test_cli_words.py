"""The console script takes words as the README writes them (issue 37 item 3): `history search two
words` unquoted, `-word` to leave out without quotes, and `echo hi | tui-agent ask -` stores "hi",
not stdin's trailing newline."""

from __future__ import annotations

import subprocess

from cli_fork import tui_agent_argv

from tui_agent.core.store import history


def run(env, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, input=stdin)


def hits(result: subprocess.CompletedProcess[str]) -> list[int]:
    assert result.returncode in (0, 1), result.stderr
    return [int(line.split("\t")[0]) for line in result.stdout.splitlines()]


def test_history_search_takes_words_and_minus_words_unquoted(env):
    conversation = history.new_conversation("animals")
    red_fox = history.add_message(conversation.id, "user", "a red fox jumps").id
    history.add_message(conversation.id, "user", "a red dog sleeps")
    blue_fox = history.add_message(conversation.id, "user", "a blue fox runs").id
    assert hits(run(env, "history", "search", "red", "fox")) == [red_fox]
    assert hits(run(env, "history", "search", "red fox")) == [red_fox]  # quoted as before
    assert hits(run(env, "history", "search", "fox", "-red")) == [blue_fox]
    assert hits(run(env, "history", "search", "-red", "fox")) == [blue_fox]
    assert hits(run(env, "history", "search", "fox -red")) == [blue_fox]
    # An option the command does not have is still refused, elsewhere as here.
    wrong = run(env, "history", "list", "-red")
    assert wrong.returncode == 2 and "unrecognized arguments: -red" in wrong.stderr
    wrong = run(env, "history", "search", "fox", "--nope")
    assert wrong.returncode == 2 and "unrecognized arguments: --nope" in wrong.stderr


def test_ask_dash_reads_stdin_without_its_trailing_newline(env):
    result = run(env, "ask", "--new", "-", stdin="hi\n")
    assert result.returncode == 0, result.stderr
    assert env.fake.chat_requests[-1]["messages"][-1]["content"] == "hi"
    result = run(env, "ask", "--new", "-", stdin="two\nlines\n\n")
    assert result.returncode == 0, result.stderr
    assert env.fake.chat_requests[-1]["messages"][-1]["content"] == "two\nlines"
    contents = [m.content for c in history.list_conversations() for m in history.all_messages(c.id) if m.role == "user"]
    assert sorted(contents) == ["hi", "two\nlines"]
