"""A test program run through ``cli_fork.script_argv`` (the MCP test servers) is the program
``python SCRIPT ARGS`` is: its output, exit status, folder, environment and ``sys.path``; it is a
fork of the program's own server, not a new interpreter, unless its environment changes how Python
starts; a killed client takes it along."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from cli_fork import script_argv, without_startup_variables
from mcp_helpers import FIXTURE, alive, server_command, wait_gone

PROGRAM = """
import json, os, sys, time
import fractions  # a module of its own: the server imports it once


def main():
    if sys.argv[1:2] == ["wait"]:
        print(os.getpid(), flush=True)
        time.sleep(600)
    print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "pid": os.getpid(),
                      "ppid": os.getppid(), "name": __name__, "file": __file__, "env": os.environ.get("MARK"),
                      "stdin": sys.stdin.read()}))
    sys.stderr.write("to stderr\\n")
    sys.exit(int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 0)


if __name__ == "__main__":
    main()
"""


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, int, str, str]:
    """(the started process's pid, its exit status, stdout, stderr), "in\\n" on its stdin."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = process.communicate("in\n", timeout=120)
    return process.pid, process.returncode, out, err


def test_a_forked_program_answers_as_the_program_started_directly(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    here = tmp_path / "here"
    here.mkdir()
    env = {**without_startup_variables(), "MARK": "m1"}
    client, status, out, err = run([*script_argv(script), "7", "x y"], here, env)
    started, plain_status, plain_out, plain_err = run([sys.executable, str(script), "7", "x y"], here, env)
    assert (status, err) == (plain_status, plain_err) == (7, "to stderr\n")
    seen, direct = json.loads(out), json.loads(plain_out)
    for key in ("argv", "cwd", "path0", "name", "file", "env", "stdin"):
        assert seen[key] == direct[key], key
    assert seen["argv"] == [str(script), "7", "x y"] and seen["env"] == "m1" and seen["stdin"] == "in\n"
    assert direct["pid"] == started
    # Forked: the program is not the client the caller started (nor its child), but the server's.
    assert script_argv(script)[3].endswith("cli_fork_client.py")
    assert seen["pid"] != client and seen["ppid"] != client


def test_a_run_whose_environment_changes_how_python_starts_is_the_plain_program(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    argv = script_argv(script)
    env = {**without_startup_variables(), "PYTHONDONTWRITEBYTECODE": "1"}
    process = subprocess.Popen([*argv, "wait"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        assert int(process.stdout.readline()) == process.pid  # the client exec'd `python SCRIPT`
    finally:
        process.kill()
        process.wait()
    process = subprocess.Popen([*argv, "wait"], stdout=subprocess.PIPE, text=True, env=without_startup_variables())
    try:
        assert process.stdout is not None
        program = int(process.stdout.readline())
        assert program != process.pid  # forked by the server
        process.kill()  # a killed client takes its program along
        process.wait()
        assert wait_gone([program], timeout_s=30) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_term_signal_to_the_client_ends_the_forked_program(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    process = subprocess.Popen(
        [*script_argv(script), "wait"], stdout=subprocess.PIPE, text=True, env=without_startup_variables()
    )
    assert process.stdout is not None
    program = int(process.stdout.readline())
    assert alive(program)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == -signal.SIGTERM
    assert wait_gone([program], timeout_s=30) == []


def test_the_mcp_fixture_server_is_forked_and_speaks_mcp(tmp_path):
    command, args = server_command(FIXTURE, "stdio")
    pids = tmp_path / "pids"
    env = {**without_startup_variables(), "FIXTURE_MCP_PIDS": str(pids)}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    done = subprocess.run(
        [command, *args], input=json.dumps(hello) + "\n", capture_output=True, text=True, env=env, timeout=120
    )
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "fixture", done.stderr
    assert os.path.exists(pids) and wait_gone([int(p) for p in pids.read_text().split()]) == []
