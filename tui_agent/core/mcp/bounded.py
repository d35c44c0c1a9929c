"""Reading from an MCP server with a bound: no message is read whole past ``MAX_MESSAGE_BYTES``.

The SDK's stdio transport joins a line by string concatenation and parses it whole: a 50 MB
result took 177 s and 576 MB. ``bounded_stdio_client`` is the SDK's ``stdio_client`` (same
process start and shutdown, its own helpers) with a line reader that keeps at most the bound: a
longer line is skipped as it streams in, and the request it answered gets a JSON-RPC error that
says so (its id is read from the line's first or last bytes). Over streamable HTTP,
``BoundedTransport`` stops a response body at the bound (the SDK turns that into an error for
the request; one SSE event is already capped by the SDK at 1 MB).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

log = logging.getLogger("tui_agent.mcp")

MAX_MESSAGE_BYTES = 28_000_000  # one message (a result): a 20 MB image in base64 fits
_EDGE = 256  # bytes kept of a skipped line's start and end, to find its id
_ID_HEAD = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]{0,100}")')
_ID_TAIL = re.compile(rb'"id"\s*:\s*(-?\d+|"[^"\\]{0,100}")\s*\}\s*$')
TOO_LARGE = -32098  # a JSON-RPC server error code of our own (-32000..-32099; -32001 is the SDK's timeout)


def too_large_text(size: int, limit: int, *, exact: bool = False) -> str:
    shown = f"{size:,}" if exact else f"more than {size:,}"
    return f"the answer was {shown} bytes, over the {limit:,}-byte limit for one message: it was not read"


def _line_id(head: bytes, tail: bytes) -> Any:
    match = _ID_HEAD.match(head) or _ID_TAIL.search(tail)
    return json.loads(match.group(1)) if match else None


class LineBound:
    """Splits a byte stream into lines of at most ``limit`` bytes; longer lines are reported, not kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._skipping = False
        self._skipped = 0
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | tuple[Any, int]]:
        """Whole lines (bytes) and skipped lines ((their id or None, bytes seen)) in order."""
        out: list[bytes | tuple[Any, int]] = []
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._skipping:
                self._skipped += len(piece)
                self._tail = (self._tail + piece)[-_EDGE:]
            else:
                self._buffer += piece
                if len(self._buffer) > self.limit:
                    self._skipping = True
                    self._skipped = len(self._buffer)
                    self._head = bytes(self._buffer[:_EDGE])
                    self._tail = bytes(self._buffer[-_EDGE:])
                    self._buffer = bytearray()
            if end < 0:
                break
            if self._skipping:
                out.append((_line_id(self._head, self._tail), self._skipped))
                self._skipping = False
            else:
                out.append(bytes(self._buffer))
                self._buffer = bytearray()
            start = end + 1
        return out


@asynccontextmanager
async def bounded_stdio_client(
    server: Any, errlog: TextIO = sys.stderr, limit: int | None = None
) -> AsyncGenerator[Any, None]:
    """The SDK's ``stdio_client`` with a bounded line reader (see the module's text)."""
    bound = MAX_MESSAGE_BYTES if limit is None else limit
    import anyio
    import anyio.lowlevel
    import mcp_types as types
    from mcp.client import stdio as sdk
    from mcp.shared.message import SessionMessage

    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    read_stream_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[Any](0)
    shutting_down = False
    writer_done = anyio.Event()

    def message(item: bytes | tuple[Any, int]) -> Any:
        if isinstance(item, bytes):
            return sdk._parse_line(item.decode(server.encoding, server.encoding_error_handler))
        request_id, size = item
        text = too_large_text(size, bound, exact=True)
        log.warning("MCP server %s: %s", server.command, text)
        if request_id is None:
            return ValueError(f"a line of {text}")
        error = types.ErrorData(code=TOO_LARGE, message=text)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    async def stdout_reader() -> None:
        assert process.stdout, "Opened process is missing stdout"
        lines = LineBound(bound)
        try:
            async with read_stream_writer:
                try:
                    async for chunk in _chunks(process.stdout):
                        for item in lines.feed(chunk):
                            try:
                                await read_stream_writer.send(message(item))
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                log.exception("Reading from the MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin, "Opened process is missing stdin"
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode(server.encoding, server.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _chunks(stream: Any) -> AsyncIterator[bytes]:
    import anyio

    while True:
        try:
            yield await stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return


def bounded_transport(limit: int | None = None) -> Any:
    """An httpx2 transport whose response bodies stop at ``limit`` bytes (a StreamError the SDK
    turns into an error for the request)."""
    import httpx2

    bound = MAX_MESSAGE_BYTES if limit is None else limit

    class BodyTooLarge(httpx2.StreamError):
        pass

    class BoundedStream(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self.inner:
                seen += len(chunk)
                if seen > bound:
                    log.warning("MCP server over HTTP: %s", too_large_text(seen, bound))
                    raise BodyTooLarge(too_large_text(seen, bound))
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class BoundedTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            response.stream = BoundedStream(response.stream)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedTransport()
