"""Shared by the MCP tests: the fixture server's command line, child-process checks, an HTTP server."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cli_fork import script_argv, without_startup_variables
from pg_cluster import free_port as free_port  # one free-port helper for every test server

from tui_agent.core.mcp import config as mcp_config

FIXTURE = Path(__file__).parent / "mcp_servers" / "fixture_server.py"
HOSTILE_SERVER = Path(__file__).parent / "mcp_servers" / "hostile_server.py"
#: What the test MCP servers import as they run (the stdio and HTTP transports, Pillow for a picture):
#: their fork server imports these once with the servers' own modules (cli_fork.script_argv).
SERVER_RUN_MODULES = (
    "mcp.server.stdio",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "uvicorn",
    "PIL.Image",
    "PIL.PngImagePlugin",
)
#: How long a test waits for an MCP server to start in the app: the fixture server loads the MCP SDK
#: (1.8 s of CPU), 10-16 s at load 8 with two CPU burners, against the wait helper's 30 s. Longer than
#: the product's own start limit (the profile's mcp_timeout_s, 60 s), so a start the product gives up
#: on shows as its "failed" state, not as the test's timeout.
MCP_START_S = 120.0


def server_command(script: Path, *args: str) -> tuple[str, list[str]]:
    """``(command, args)`` that run ``python SCRIPT ARGS``: a test MCP server, forked from a process
    that has imported the MCP SDK once (``cli_fork.script_argv``), not started from nothing (its
    imports are ~1.3 s of CPU a start). It is the same program on the same pipes; its pid (which
    ``FIXTURE_MCP_PIDS`` logs) is the fork's, and it ends when its stdin closes or the command is
    killed, as the program started directly does."""
    argv = script_argv(script, *SERVER_RUN_MODULES)
    return argv[0], [*argv[1:], *args]


def add_fixture(name: str = "fx", *flags: str, policy: str = "auto", timeout_s: float | None = None) -> None:
    command, args = server_command(FIXTURE, "stdio", *flags)
    mcp_config.add_server(
        mcp_config.ServerConfig(
            name=name,
            transport="stdio",
            command=command,
            args=args,
            # The SDK passes only a safe environment to a server; the pid log goes through `env` (and ${} expansion).
            env={"FIXTURE_MCP_PIDS": "${FIXTURE_MCP_PIDS}"} if "FIXTURE_MCP_PIDS" in os.environ else {},
            policy=policy,
            timeout_s=timeout_s,
        )
    )


def insert_fixture_row(name: str, marker: Path) -> None:
    """The fixture server written into the store's table directly, as plain SQL or another machine
    would (no approval on this one), set to run its tools without asking; it logs its pid to
    ``marker`` if it ever starts."""
    import json

    from tui_agent.core.store.models import McpServer

    command, args = server_command(FIXTURE, "stdio")
    McpServer.insert(
        name=name,
        transport="stdio",
        command=command,
        args=json.dumps(args),
        env=json.dumps({"FIXTURE_MCP_PIDS": str(marker)}),
        policy="auto",
    ).execute()


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a reaped child is gone)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state


def started_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def wait_gone(pids: list[int], timeout_s: float = 20) -> list[int]:
    """Pids still alive after waiting (a dying process takes a moment on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


def start_http_fixture(port: int, log: Path) -> subprocess.Popen[bytes]:
    command, args = server_command(FIXTURE, "http", str(port))
    process = subprocess.Popen(
        [command, *args],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**without_startup_variables(), "FIXTURE_MCP_PIDS": ""},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP fixture server exited: {log.read_text()}") from None
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the HTTP fixture server did not listen within 60 s")


def my_children_running(word: str) -> list[int]:
    """Live (not zombie) children of this process whose command line contains ``word``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and word in cmdline:
            found.append(int(entry.name))
    return found


@asynccontextmanager
async def running_manager(env: Any, registry: Any, **kwargs: Any) -> AsyncIterator[Any]:
    """The vault's MCP servers started for the profile (their tools in ``registry``), ended after."""
    from tui_agent.core.mcp.manager import McpManager

    manager = McpManager(env.vault, registry, **kwargs)
    await manager.start(env.profile)
    try:
        yield manager
    finally:
        await manager.aclose()
