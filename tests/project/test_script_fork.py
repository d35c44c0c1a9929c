"""A test program run through ``cli_fork.script_argv`` (the MCP test servers) is the program
``python SCRIPT ARGS`` is: its output, exit status, folder, environment and ``sys.path``; it is a
fork of the program's own server, not a new interpreter, unless its environment changes how Python
starts; a killed client takes it along."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from cli_fork import HERE, script_argv, without_startup_variables
from mcp_helpers import FIXTURE, alive, server_command, wait_gone

PROGRAM = """
import json, os, sys, time
import fractions  # a module of its own: the server imports it once


def main():
    if sys.argv[1:2] == ["wait"]:
        import signal
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))  # a program that ends its own way
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


def test_a_term_signal_to_the_client_reaches_the_forked_program(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    process = subprocess.Popen(
        [*script_argv(script), "wait"], stdout=subprocess.PIPE, text=True, env=without_startup_variables()
    )
    assert process.stdout is not None
    program = int(process.stdout.readline())
    assert alive(program)
    process.send_signal(signal.SIGTERM)
    # The program got it (and exited its own way: 42), not only the client (which would die of it).
    try:
        code = process.wait(timeout=60)
    except subprocess.TimeoutExpired:  # seen once in CI: say where it stopped
        state = Path(f"/proc/{program}/status").read_text() if alive(program) else "gone"
        process.kill()
        raise AssertionError(f"the client never ended; its program: {state[:400]}") from None
    assert code == 42
    assert wait_gone([program], timeout_s=30) == []


def test_a_signal_the_client_gets_before_it_knows_its_program_reaches_the_program(tmp_path):
    """The program can write to the client's stdout before the client has read the server's "pid"
    line: a SIGTERM sent then (a test that read the program's first line) must reach the program,
    not kill the client. A server of the test's own holds the "pid" line until the signal is sent."""
    target = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))\nprint('ready', flush=True)\ntime.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert target.stdout is not None and target.stdout.readline().strip() == "ready"
    path = str(tmp_path / "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    asked = threading.Event()
    told = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        _data, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
        for fd in fds:
            os.close(fd)
        asked.set()
        told.wait(30)
        conn.sendall(f"pid {target.pid}\n".encode())
        conn.sendall(f"exit {target.wait(30)}\n".encode())
        conn.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    client = subprocess.Popen(
        [sys.executable, "-I", "-S", str(HERE / "cli_fork_client.py"), path, "--script", str(tmp_path / "x.py")]
    )
    try:
        assert asked.wait(30)
        client.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # taken by the client before it knows its program (else it is the usual forward)
        told.set()
        assert client.wait(timeout=30) == 42
        assert target.wait(timeout=30) == 42
    finally:
        for process in (client, target):
            if process.poll() is None:
                process.kill()
                process.wait()
        listener.close()


def test_the_mcp_fixture_server_started_as_the_product_starts_it_is_forked_and_speaks_mcp(tmp_path):
    """With the environment the MCP SDK gives a server (its safe variables and the config's own),
    the fixture server is a fork (the pid it logs is not the started process's), and it answers."""
    from mcp.client.stdio import get_default_environment

    command, args = server_command(FIXTURE, "stdio")
    pids = tmp_path / "pids"
    env = {**get_default_environment(), "FIXTURE_MCP_PIDS": str(pids)}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    started = subprocess.Popen(
        [command, *args], env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = started.communicate(json.dumps(hello) + "\n", timeout=120)
    answer = json.loads(out.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "fixture", err
    logged = [int(p) for p in pids.read_text().split()]
    assert len(logged) == 1 and logged[0] != started.pid  # forked, not `python fixture_server.py`
    assert wait_gone(logged) == []


def test_a_client_gone_before_it_hears_of_its_program_leaves_the_server_serving(tmp_path):
    """A client killed right after it asked (the product kills MCP servers at any moment): its
    program is killed, and the server goes on forking the next runs (it died of the reset once)."""
    import socket

    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    argv = script_argv(script)
    path = argv[4]
    body = json.dumps({"script": str(script), "args": ["wait"], "env": without_startup_variables(), "cwd": "/"})
    with open(os.devnull, "r+b") as null:
        for _ in range(3):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(path)
            socket.send_fds(conn, [struct.pack("!I", len(body))], [null.fileno()] * 3)
            conn.sendall(body.encode())
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
            conn.close()
    client, status, out, _ = run([*argv, "3"], tmp_path, without_startup_variables())
    seen = json.loads(out)
    assert status == 3 and seen["pid"] != client  # still forked by the same server
