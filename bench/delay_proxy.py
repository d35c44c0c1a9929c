"""A loopback TCP proxy that delays each packet: a far database server on this machine (issue 35).

Every chunk read from either side is forwarded ``delay_ms / 2`` later, so a request and its answer
cost ``delay_ms`` more a round trip, as a server 20-80 ms away does; chunks keep their order, and
a connection that is only streaming pays the delay once, not per chunk (they travel together).
Nothing leaves the machine: it listens on 127.0.0.1 and connects to a loopback server.

It also counts the round trips a PostgreSQL client pays (``round_trips``), reading the messages
it sends (PostgreSQL's frontend/backend protocol, version 3): each message after which the client
waits for the server's answer is one: a Sync (the end of a statement, or of a pipeline of many), a
simple Query, a function call, the start-up, the SSL (or GSS) request and each password or SASL
message. Statements sent together in a pipeline end in one Sync: one round trip, as over a real
network. Not counted: a Terminate (the client leaving waits for nothing), and a Flush, which psycopg
sends right behind a pipeline's Sync, in the same flight (a client waiting on a Flush alone, to read
a result inside a pipeline, would pay a round trip this does not count: tui-agent never does). With
``delay_ms=0`` it is a plain counting proxy (tests/store/test_round_trips.py).
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import threading
import time

WAITS = frozenset(b"SQpF")  # Sync, Query, password/SASL response, function call
STARTUP_CODES = (80877103, 80877104, 80877102)  # SSL request, GSS encryption request, cancel request


class Frontend:
    """Reads what a PostgreSQL client sends, message by message, and counts those it waits on."""

    def __init__(self) -> None:
        self.buffer = b""
        self.started = False  # the start-up message went (from then on each message has a type byte)
        self.waits = 0
        self.opaque = False  # encrypted (SSL accepted): nothing more can be read

    def feed(self, data: bytes) -> int:
        """The messages in ``data`` that wait for an answer (``waits``: their sum so far)."""
        counted = self._count(data)
        self.waits += counted
        return counted

    def _count(self, data: bytes) -> int:
        if self.opaque:
            return 0
        self.buffer += data
        counted = 0
        while True:
            head = 4 if not self.started else 5
            if len(self.buffer) < head:
                return counted
            if not self.started:
                (length,) = struct.unpack("!I", self.buffer[:4])
                if len(self.buffer) < max(length, 8):
                    return counted
                (code,) = struct.unpack("!I", self.buffer[4:8])
                self.started = code not in STARTUP_CODES
                counted += 1
            else:
                kind = self.buffer[0]
                (length,) = struct.unpack("!I", self.buffer[1:5])
                length += 1
                if len(self.buffer) < length:
                    return counted
                counted += kind in WAITS
            self.buffer = self.buffer[length:]


class DelayProxy:
    def __init__(self, target_host: str, target_port: int, delay_ms: float, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.one_way_s = delay_ms / 2000.0
        self.port = port
        self.connections = 0  # accepted so far
        self.round_trips = 0  # on every connection so far (see the module's doc)
        self.clients: list[Frontend] = []  # each connection's client, in the order they came
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: Frontend, from_client: bool
    ) -> None:
        """Forward what ``reader`` gives, each chunk ``one_way_s`` after it came (order kept);
        ``client``: what the client sent so far (counted when ``from_client``)."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                if from_client:
                    self.round_trips += client.feed(data)
                elif data == b"S" and not client.started:
                    client.opaque = True  # the server accepted SSL: encrypted from here
                queue.put_nowait((time.monotonic() + self.one_way_s, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait((0.0, b""))
        try:
            await sender
        except (ConnectionError, OSError):
            pass

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        client = Frontend()
        self.clients.append(client)
        await asyncio.gather(self._pipe(reader, up_writer, client, True), self._pipe(up_reader, writer, client, False))

    async def serve(self) -> None:
        server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        async with server:
            await server.serve_forever()

    def start(self) -> DelayProxy:
        """In a daemon thread; returns once it listens (``self.port``)."""
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), daemon=True, name="delay-proxy")
        self._thread.start()
        self._ready.wait(10)
        return self


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--to", required=True, help="HOST:PORT of the server (loopback)")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="added to each round trip")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    host, port = args.to.rsplit(":", 1)
    proxy = DelayProxy(host, int(port), args.delay_ms, args.port)

    async def run() -> None:
        task = asyncio.ensure_future(proxy.serve())
        while not proxy._ready.is_set():
            await asyncio.sleep(0.01)
        print(f"listening on 127.0.0.1:{proxy.port}", flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
