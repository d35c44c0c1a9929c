"""A real MCP server for the tests, written with the official SDK's server side (mcp.server.mcpserver).

Usage: ``python fixture_server.py stdio [--garbage] [--die-on-start] [--hang-on-start]``
or ``python fixture_server.py http PORT``. Tools: echo (text), picture (an image), broken (the
tool raises: an isError result), slow (sleeps), huge (a very long text), grow (adds a tool and
announces tools/list_changed), noisy (prints garbage to stdout, then answers), die (the process
exits mid-call). Each start appends a line to $FIXTURE_MCP_PIDS (when set) so tests can check
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
    await ctx.notify_tools_changed()
    return "added extra"


@server.tool()
def noisy() -> str:
    """Print garbage to stdout (breaking the protocol's framing), then answer."""
    sys.stdout.write("this is not JSON-RPC\n{broken json\n")
    sys.stdout.flush()
    return "noisy answered"


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
    if "--garbage" in args:
        print("garbage before the first message", flush=True)
    if args and args[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
