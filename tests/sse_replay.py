"""Replay recorded-style HTTP answers of real OpenAI-compatible servers over real loopback HTTP.

Each fixture under ``tests/fixtures/streams/`` is one answer: a header of ``#`` lines (where
the shape comes from, ``# status:``, ``# content-type:``, ``# line-endings: crlf|cr``,
``# write: bytewise`` for one byte per write), then the body served byte for byte (SSE events,
a JSON error, an HTML page...). The server answers ``POST .../chat/completions``
from a queue of fixtures and records every request (path, headers, JSON body), so tests can
assert how many requests went out and what they carried. Once the queue is empty it answers
with ``after_tool.sse`` (a plain text reply). Run alone:
``python tests/sse_replay.py deepseek_reasoning_content.sse --port 8765``.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from fake_openai import LoopbackServer

FIXTURES = Path(__file__).parent / "fixtures" / "streams"
DEFAULT_REPLY = "after_tool.sse"


@dataclass
class Recorded:
    """One answer: status, headers and the exact body bytes."""

    name: str
    status: int = 200
    content_type: str = "text/event-stream"
    body: bytes = b""
    source: list[str] = field(default_factory=list)
    hold_before: int | None = None  # stop before this SSE event until the test calls release()
    bytewise: bool = False  # one byte per write (chunks split UTF-8 characters and CR from LF)


def load(name: str) -> Recorded:
    """Read a fixture: ``#`` header lines, then the body (line endings kept as written, CRLF on request)."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    header: list[str] = []
    lines = text.split("\n")
    while lines and lines[0].startswith("#"):
        header.append(lines.pop(0)[1:].strip())
    body = "\n".join(lines).lstrip("\n")
    answer = Recorded(name)
    for line in header:
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "status":
            answer.status = int(value)
        elif key == "content-type":
            answer.content_type = value.strip()
        elif key == "line-endings" and value.strip() == "crlf":
            body = body.replace("\n", "\r\n")
        elif key == "line-endings" and value.strip() == "cr":
            body = body.replace("\n", "\r")
        elif key == "write" and value.strip() == "bytewise":
            answer.bytewise = True
        elif key == "source":
            answer.source.append(value.strip())
    answer.body = body.encode("utf-8")
    return answer


def held(name: str, before_event: int) -> Recorded:
    """A fixture served up to ``before_event`` (0-based), then held until ``ReplayServer.release()``."""
    answer = load(name)
    answer.hold_before = before_event
    return answer


class ReplayServer(LoopbackServer):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.queue: deque[Recorded] = deque()
        self.gate = threading.Event()
        self.requests: list[dict[str, Any]] = []
        super().__init__(host, port)

    def script(self, *names: str | Recorded) -> None:
        self.queue.extend(load(name) if isinstance(name, str) else name for name in names)

    def release(self) -> None:
        self.gate.set()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def _next(self) -> Recorded:
        with self.lock:
            return self.queue.popleft() if self.queue else load(DEFAULT_REPLY)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, "application/json", json.dumps({"object": "list", "data": []}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                with replay.lock:
                    replay.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                answer = replay._next()
                if answer.hold_before is not None:
                    self._send_held(answer)
                elif answer.bytewise:
                    self._send_bytewise(answer)
                else:
                    self._send(answer.status, answer.content_type, answer.body)

            def _send_held(self, answer: Recorded) -> None:
                sep = b"\r\n\r\n" if b"\r\n\r\n" in answer.body else b"\n\n"
                events = [e + sep for e in answer.body.split(sep) if e.strip()]
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for index, event in enumerate(events):
                        if index == answer.hold_before:
                            replay.gate.wait(30)
                        self.wfile.write(event)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def _send_bytewise(self, answer: Recorded) -> None:
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                try:
                    for index in range(len(answer.body)):
                        self.wfile.write(answer.body[index : index + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                try:
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fixtures", nargs="*", help="fixture file names, answered in order")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args()
    replay = ReplayServer(port=options.port)
    replay.script(*options.fixtures)
    print(replay.base_url, flush=True)
    replay.server.serve_forever()
