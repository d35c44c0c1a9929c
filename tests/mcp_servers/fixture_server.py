"""A real MCP server for the tests, written with the official SDK's server side (mcp.server.mcpserver).

Usage: ``python fixture_server.py stdio [--garbage] [--die-on-start] [--hang-on-start]``
or ``python fixture_server.py http PORT``. Tools: echo (text), picture (an image), broken (the
tool raises: an isError result), slow (sleeps), huge (a very long text), grow (adds a tool and
announces tools/list_changed), noisy (prints to stdout, then answers); with --garbage
the server's wire itself carries lines that are not JSON-RPC; --legacy makes it a
handshake-era (pre-2026) server, die (the process
exits mid-call), header (an HTTP request header). Each start appends a line to $FIXTURE_MCP_PIDS (when set) so tests can check
that every child is gone.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
import time

from mcp.server.mcpserver import Context, Image, MCPServer

server = MCPServer("fixture", instructions="Tools for tui-agent's tests.")


def _png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.new("RGB", (24, 16), color).save(buffer, "PNG")
    return buffer.getvalue()


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, prefixed with 'echo:'."""
    return f"echo: {text}"


@server.tool()
def picture(color: str = "red") -> Image:
    """Draw a small picture of one colour."""
    rgb = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (30, 60, 220)}.get(color, (128, 128, 128))
    return Image(data=_png(rgb), format="png")


@server.tool()
def broken(reason: str = "it always fails") -> str:
    """A tool that always fails."""
    raise ValueError(f"broken on purpose: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def huge(size: int = 100_000) -> str:
    """Return a very long text."""
    return "x" * size


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named 'extra' and tell the client the tool list changed."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra tool here"

    server.add_tool(extra)
    await ctx.notify_tools_changed()  # 2026-era clients: their subscriptions/listen stream
    try:  # handshake-era clients: the notifications/tools/list_changed notification
        await ctx.session.send_tool_list_changed()
    except Exception as exc:
        print(f"no legacy list_changed: {exc!r}", file=sys.stderr)
    return "added extra"


@server.tool()
def noisy() -> str:
    """Print to stdout (the SDK diverts a tool's stdout to stderr; --garbage breaks the wire itself)."""
    os.write(1, b"this is not JSON-RPC\n")
    return "noisy answered"


@server.tool()
def malformed() -> str:
    """With --garbage, the relay turns this tool's response into a malformed JSON-RPC result."""
    return "MALFORM_ME"


def _malform(line: bytes) -> bytes:
    """A response whose result breaks the CallToolResult schema (content must be a list)."""
    import json

    message = json.loads(line)
    return json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"content": 42}}).encode() + b"\n"


def relay(garbage: bool, legacy: bool) -> None:
    """Run the real server as a child and relay its pipes. --garbage writes a line that is not
    JSON-RPC before every message (what a server built with a careless library does); --legacy
    refuses ``server/discover`` so the client falls back to the handshake-era protocol."""
    import json
    import subprocess
    import threading

    child = subprocess.Popen(
        [sys.executable, __file__, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert child.stdin is not None and child.stdout is not None

    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(data: bytes) -> None:
        with lock:
            out.write(data)
            out.flush()

    def pump_in() -> None:
        for line in sys.stdin.buffer:
            if legacy and b'"server/discover"' in line:
                request = json.loads(line)
                error = {"code": -32601, "message": "Method not found"}
                send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode() + b"\n")
                continue
            child.stdin.write(line)
        child.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    if garbage:
        send(b"garbage before the first message\n")
    for line in child.stdout:
        if b"MALFORM_ME" in line:
            line = _malform(line)
        send((b"{not json: garbage between messages\n" if garbage else b"") + line)
    sys.exit(child.wait())


@server.tool()
def header(ctx: Context) -> str:
    """The X-Tui-Test header of the HTTP request (streamable HTTP only)."""
    headers = ctx.headers or {}
    return str({k.lower(): v for k, v in headers.items()}.get("x-tui-test", "no header"))


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


def main() -> None:
    pids = os.environ.get("FIXTURE_MCP_PIDS")
    if pids:
        with open(pids, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    args = sys.argv[1:]
    print(f"fixture server starting: {args}", file=sys.stderr, flush=True)
    if "--die-on-start" in args:
        sys.exit("fixture server: dying on start as asked")
    if "--hang-on-start" in args:
        time.sleep(3600)
    if "--garbage" in args or "--legacy" in args:
        relay("--garbage" in args, "--legacy" in args)
        return
    if args and args[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
