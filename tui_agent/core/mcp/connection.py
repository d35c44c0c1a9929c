"""One live MCP server: a task that owns the SDK client from start to stop.

The SDK's client is an async context manager whose cancel scopes must be entered and left in
one task, so each server gets an owner task that opens it, lists the tools, then waits for a
stop request or for the server to go away. Calls come from other tasks (the tool loop) and go
through the open client. Failures never raise out of here: they set ``state`` and ``error``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from tui_agent import __version__
from tui_agent.core.approvals import NotApproved
from tui_agent.core.mcp.bounded import TOO_LARGE, bounded_stdio_client, bounded_transport
from tui_agent.core.mcp.config import McpConfigError, ServerConfig, expand
from tui_agent.core.mcp.tool_caps import cap_tools

log = logging.getLogger("tui_agent.mcp")
MAX_TOOL_PAGES = 20
STATES = ("stopped", "starting", "ready", "failed", "dead")


class McpCallError(Exception):
    """A call could not be made or did not finish; the message is for the model and the user."""


class _WatchedRead:
    """Wraps the transport's read stream: notices the end of the stream (the server is gone)
    and counts lines that were not JSON-RPC (the SDK hands those over as exceptions)."""

    def __init__(self, inner: Any, on_end: Callable[[], None], on_garbage: Callable[[Exception], None]) -> None:
        self._inner = inner
        self._on_end = on_end
        self._on_garbage = on_garbage

    async def receive(self) -> Any:
        return await self.__anext__()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise
        if isinstance(item, Exception):
            self._on_garbage(item)
        return item

    async def __aenter__(self) -> _WatchedRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class ServerConnection:
    def __init__(self, config: ServerConfig, log_path: Path, timeout_s: float) -> None:
        self.config = config
        self.log_path = log_path
        self.timeout_s = timeout_s
        self.state = "stopped"
        self.error = ""
        self.tools: list[Any] = []  # mcp_types.Tool
        self.generation = 0  # bumped whenever the tool list changes
        self.garbage_lines = 0
        self.notes: list[str] = []  # what was left out of what the server offered (caps), for the user
        self.last_garbage = ""
        self.on_change: Callable[[ServerConnection], None] = lambda connection: None
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._gone = asyncio.Event()
        self._stopping = False
        self._refresh: asyncio.Future[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> bool:
        """Start (or wait for a start under way); True when the server is ready."""
        if self.running and self.state in ("dead", "failed"):
            # The session that failed is still winding down (the SDK ends the process group):
            # waiting on it would wait for a start that never comes. Let it end, then start anew.
            await self.stop()
        if not self.running:
            self._ready = asyncio.Event()
            self._gone = asyncio.Event()
            self._stopping = False
            self.error = ""
            self._set_state("starting")
            self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        waiter = asyncio.ensure_future(self._ready.wait())
        task = self._task
        assert task is not None
        done, _ = await asyncio.wait({waiter, task}, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not done:
            self._fail(f"did not start within {self.timeout_s:g}s (timeout)")
            await self.stop(wait_s=0)
        return self.state == "ready"

    async def stop(self, wait_s: float = 8) -> None:
        """End the session and the server process (the SDK closes stdin, then terminates the group)."""
        task = self._task
        if task is None:
            return
        self._stopping = True
        self._gone.set()
        try:
            async with asyncio.timeout(wait_s):
                await asyncio.shield(task)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()  # the SDK's shutdown is shielded and bounded: the process still ends
            await asyncio.gather(task, return_exceptions=True)
        self._task = None
        if self.state in ("ready", "starting"):
            self._set_state("stopped")

    async def _run(self) -> None:
        from mcp import Client
        from mcp_types import Implementation

        from tui_agent.core.mcp.errlog import VisibleLog

        errlog = VisibleLog(self.log_path)  # the server's stderr, made visible; closed in finally
        try:
            transport = self._transport(errlog.writer)
            client = Client(
                transport,
                message_handler=self._on_message,
                client_info=Implementation(name="tui-agent", version=__version__),
                cache=None,
            )
            async with client:
                self._client = client
                await self._list_tools()
                self._set_state("ready")
                self._ready.set()
                listener = asyncio.create_task(self._listen(client))
                try:
                    await self._gone.wait()
                finally:
                    listener.cancel()
                    await asyncio.gather(listener, return_exceptions=True)
                    self._client = None
        except asyncio.CancelledError:
            raise
        except (McpConfigError, NotApproved) as exc:
            self._fail(str(exc))
        except BaseException as exc:
            if self.state == "starting" and "Connection closed" in _describe(exc):
                errlog.close(wait_s=2.0)  # what it wrote before it exited is in the log now
                last = self._last_stderr_line()
                self._fail(f"the server exited while starting{': ' + last if last else ''} (see {self.log_path.name})")
            else:
                self._fail(_describe(exc))
        finally:
            self._client = None
            errlog.close()
            self._ready.set()
        if not self._stopping and self.state == "ready":
            self._fail(self._gone_text())

    def _transport(self, errlog: TextIO) -> Any:
        from tui_agent.core import approvals
        from tui_agent.core.mcp.config import approval_item

        config = self.config
        if config.error:
            raise McpConfigError("", config.error)
        approvals.require(approval_item(config))  # the gate: nothing starts or connects unless approved here
        if config.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {key: expand(value, whole_name=True) for key, value in config.headers.items()}
            http = httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30.0, read=300.0), transport=bounded_transport()
            )
            return self._watched(streamable_http_client(config.url, http_client=http), http)
        from mcp import StdioServerParameters

        env = {key: expand(value) for key, value in config.env.items()}
        params = StdioServerParameters(
            command=command_path(config.command),
            args=list(config.args),
            env=env or None,
            cwd=config.cwd or None,
            encoding_error_handler="replace",
        )
        return self._watched(bounded_stdio_client(params, errlog=errlog))

    @asynccontextmanager
    async def _watched(self, inner: Any, http: Any = None) -> AsyncIterator[tuple[Any, Any]]:
        try:
            async with inner as (read_stream, write_stream):
                yield _WatchedRead(read_stream, self._gone.set, self._garbage), write_stream
        finally:
            if http is not None:
                await http.aclose()

    # ---------------------------------------------------------------- tools
    async def _list_tools(self) -> None:
        client = self._client
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            async with asyncio.timeout(self.timeout_s):
                page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools, self.notes = cap_tools(tools)
        for note in self.notes:
            log.warning("MCP server %s: %s", self.name, note)
        self.generation += 1

    async def refresh_tools(self) -> None:
        """Re-read the tool list after ``tools/list_changed``."""
        if self._client is None:
            return
        try:
            await self._list_tools()
        except Exception as exc:
            log.warning("MCP server %s: could not refresh its tools: %s", self.name, _describe(exc))
            return
        log.info("MCP server %s: tools changed: %s", self.name, ", ".join(t.name for t in self.tools))
        self.on_change(self)

    async def _listen(self, client: Any) -> None:
        """2026-era servers send list changes on a ``subscriptions/listen`` stream; older ones send a
        notification that arrives in ``_on_message``."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    await self.refresh_tools()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("MCP server %s: no list-change subscription (%s)", self.name, _describe(exc))

    async def _on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._refresh = asyncio.ensure_future(self.refresh_tools())

    def _garbage(self, exc: Exception) -> None:
        self.garbage_lines += 1
        errors = getattr(exc, "errors", None)
        line = errors()[0].get("input") if callable(errors) and errors() else None
        self.last_garbage = f"not JSON-RPC: {line!r}"[:200] if line is not None else _describe(exc)[:200]
        if self.garbage_lines <= 3:
            log.warning("MCP server %s wrote to stdout what is %s", self.name, self.last_garbage)

    # ---------------------------------------------------------------- calls
    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """Call one tool; raise McpCallError with a readable reason when there is no result."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        client = self._client
        if client is None or self.state != "ready":
            reason = f": {self.error}" if self.error else ""
            raise McpCallError(f"MCP server {self.name} is not running ({self.state}{reason})")
        garbage_before = self.garbage_lines
        try:
            async with asyncio.timeout(timeout_s + 1):
                return await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except TimeoutError:
            raise McpCallError(self._timeout_message(tool, timeout_s, garbage_before)) from None
        except MCPError as exc:
            if exc.code == TOO_LARGE:  # the bounded reader left the answer out: say so, in the result
                raise McpCallError(f"{tool} on MCP server {self.name}: {exc.message}") from None
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(self._timeout_message(tool, timeout_s, garbage_before)) from None
            if exc.code == CONNECTION_CLOSED:
                self._gone.set()
                if self.state == "ready":  # now, so the very next request leaves its tools out
                    self._fail(f"{self._gone_text()} during a call to {tool}")
                raise McpCallError(f"MCP server {self.name} closed the connection during the call") from None
            raise McpCallError(f"MCP server {self.name} answered with error {exc.code}: {exc.message}") from None
        except ValidationError as exc:
            errors = exc.errors()
            detail = f"{'.'.join(str(p) for p in errors[0]['loc'])}: {errors[0]['msg']}" if errors else str(exc)
            raise McpCallError(f"MCP server {self.name} sent a malformed result for {tool} ({detail})") from None
        except (OSError, ConnectionError) as exc:
            self._gone.set()
            if self.state == "ready":
                self._fail(f"unreachable during a call to {tool}: {_describe(exc)}")
            raise McpCallError(f"MCP server {self.name} is unreachable: {_describe(exc)}") from None

    def _timeout_message(self, tool: str, timeout_s: float, garbage_before: int) -> str:
        message = f"{tool} on MCP server {self.name} timed out after {timeout_s:g}s"
        if self.garbage_lines > garbage_before:
            message += f"; the server wrote malformed JSON-RPC meanwhile ({self.last_garbage})"
        return message

    # -------------------------------------------------------------- helpers
    def _gone_text(self) -> str:
        if self.config.transport == "http":
            return "the server closed the connection"
        return f"the server exited (see {self.log_path.name})"

    def _last_stderr_line(self) -> str:
        try:
            lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    def _fail(self, error: str) -> None:
        self.error = error
        log.warning("MCP server %s: %s", self.name, error)
        self._set_state("failed" if self.state == "starting" else "dead")

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.on_change(self)


def command_path(command: str) -> str:
    """The program to start for ``command``: as found on PATH, else the one beside the app's own
    Python (a server installed into the app's venv, run as ``.venv/bin/tui-agent`` without activating
    the venv, whose bin/ is then not on PATH); else ``command`` itself, to fail as not found."""
    if os.sep in command or shutil.which(command):
        return command
    beside = Path(sys.executable).parent / command
    return str(beside) if shutil.which(str(beside)) else command


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups (anyio task groups raise those)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
