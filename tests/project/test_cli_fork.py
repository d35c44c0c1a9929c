"""The forked ``tui-agent`` the tests run (tests/cli_fork.py) is the program ``python -m tui_agent`` is.

Same output, exit status, files, folder and environment; a signal to it reaches the program; a
killed client takes its program with it; a run the fork cannot reproduce runs ``python -m``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_fork import PLAIN, tui_agent_argv
from fake_openai import Reply


def both(*args: str, **kwargs) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    forked = subprocess.run([*tui_agent_argv(), *args], capture_output=True, text=True, timeout=120, **kwargs)
    plain = subprocess.run([*PLAIN, *args], capture_output=True, text=True, timeout=120, **kwargs)
    return forked, plain


def test_the_fork_server_is_up_so_the_tests_use_it():
    argv = tui_agent_argv()
    assert argv[:4] == [sys.executable, "-I", "-S", argv[3]] and argv[3].endswith("cli_fork_client.py")
    assert os.path.exists(argv[4])


@pytest.mark.parametrize("args", [["--help"], ["no-such-command"], ["vault", "--help"], ["ask", "--bogus"]])
def test_output_and_exit_status_are_the_plain_programs(args):
    forked, plain = both(*args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_question_on_stdin_in_a_vault_found_from_the_folder_gives_the_same_answer(env):
    env.fake.script(Reply(text="first"), Reply(text="first"))
    forked, plain = both("--vault", str(env.vault.root), "ask", "--new", "-", input="a question from stdin\n")
    assert forked.returncode == plain.returncode == 0, forked.stderr
    assert forked.stdout == plain.stdout and "first" in forked.stdout
    asked = [r["messages"][-1]["content"] for r in env.fake.chat_requests]
    assert asked == ["a question from stdin", "a question from stdin"]


def test_the_folder_and_environment_are_the_callers(tmp_path):
    here = tmp_path / "here"
    (here / "jj_vault").mkdir(parents=True)
    without = {k: v for k, v in os.environ.items() if k != "TUI_AGENT_VAULT"}
    forked, plain = both("vault", "status", cwd=here, env=without)
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert str(here / "jj_vault") in forked.stdout + forked.stderr
    chosen = {**without, "TUI_AGENT_VAULT": str(tmp_path / "from-env")}
    forked, plain = both("vault", "status", cwd=here, env=chosen)
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert str(tmp_path / "from-env") in forked.stdout and "TUI_AGENT_VAULT" in forked.stdout


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _fork_server() -> int:
    socket_path = tui_agent_argv()[4].encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if socket_path in Path(f"/proc/{entry}/cmdline").read_bytes():
                    return int(entry)
            except OSError:
                continue
    raise AssertionError("the fork server is not running")


@pytest.mark.parametrize("how", ["interrupt", "kill"])
def test_a_signal_reaches_the_program_and_a_killed_client_takes_it_along(env, how):
    interrupted = threading.Event()
    env.fake.script(Reply(text="word " * 400, chunk_size=5, hold=interrupted, hold_after_chunks=10))
    server = _fork_server()
    client = subprocess.Popen(
        [*tui_agent_argv(), "ask", "--vault", str(env.vault.root), "--new", "interrupt me"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert client.stdout is not None
        assert client.stdout.read(20).startswith(b"word")
        (program,) = _children(server)
        if how == "interrupt":
            client.send_signal(signal.SIGINT)
            assert client.wait(timeout=60) == 130  # as `python -m tui_agent ask` exits on Ctrl+C
        else:
            client.kill()
            client.wait(timeout=60)
        for _ in range(600):
            if not _children(server):
                break
            time.sleep(0.05)
        assert not _children(server), f"the program {program} outlived its client"
    finally:
        interrupted.set()
        client.kill()
        client.communicate()


def test_a_run_with_another_interpreter_setting_is_run_by_python_m(tmp_path):
    probe = tmp_path / "sitecustomize.py"
    probe.write_text("import sys\nsys.stderr.write('fresh interpreter\\n')\n")
    changed = {**os.environ, "PYTHONPATH": str(tmp_path)}
    forked, plain = both("--help", env=changed)
    assert "fresh interpreter" in plain.stderr
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
