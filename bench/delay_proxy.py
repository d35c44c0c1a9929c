"""A loopback TCP proxy that delays each packet: a far database server on this machine (issue 35).

Every chunk read from either side is forwarded ``delay_ms / 2`` later, so a request and its answer
cost ``delay_ms`` more a round trip, as a server 20-80 ms away does; chunks keep their order, and
a connection that is only streaming pays the delay once, not per chunk (they travel together).
Nothing leaves the machine: it listens on 127.0.0.1 and connects to a loopback server.

It also counts the round trips the client pays (``round_trips``): each time a client sends after
the server last spoke (or first, on a new connection), it waits a round trip for the answer. Bytes a
client sends again before any answer (a pipeline, a COPY) ride in the same round trip. With
``delay_ms=0`` it is a plain counting proxy (tests/store/test_round_trips.py).

    python bench/delay_proxy.py --to 127.0.0.1:5432 --delay-ms 50 [--port 0]

prints ``listening on 127.0.0.1:PORT`` and runs until killed; ``DelayProxy`` does the same in a
thread of the caller (bench/far_store.py, tests).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time


class DelayProxy:
    def __init__(self, target_host: str, target_port: int, delay_ms: float, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.one_way_s = delay_ms / 2000.0
        self.port = port
        self.connections = 0  # accepted so far
        self.round_trips = 0  # client turns on every connection so far (see the module's doc)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, turn: list[bool], client: bool
    ) -> None:
        """Forward what ``reader`` gives, each chunk ``one_way_s`` after it came (order kept);
        ``turn[0]``: the server spoke last on this connection (the client's next chunk is a new
        round trip)."""
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
                if client and turn[0]:
                    self.round_trips += 1
                turn[0] = not client
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
        turn = [True]
        await asyncio.gather(self._pipe(reader, up_writer, turn, True), self._pipe(up_reader, writer, turn, False))

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
