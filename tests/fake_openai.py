"""A small OpenAI-compatible server on loopback for tests and benchmarks.

It streams text and tool calls, serves ``/v1/images/generations``, can be scripted to fail
(status codes, malformed tool-call JSON, a connection dropped mid-stream, a hang) and records
every request body. Run it alone with ``python tests/fake_openai.py --port 8765``.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """One scripted answer to a chat completion request."""

    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    status: int = 200
    error_message: str = "scripted failure"
    drop_after_chunks: int | None = None  # close the connection after this many chunks
    hang_s: float = 0.0  # sleep before answering
    chunk_delay_s: float = 0.0
    chunk_size: int = 8  # characters of text per streamed chunk
    tokens: list[str] | None = None  # explicit stream pieces (overrides chunk_size)
    hold: threading.Event | None = None  # wait (up to 300 s) for this before the finishing chunk
    hold_after_chunks: int | None = None  # with hold: wait before this chunk instead (mid-reply)


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (16, 12)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


class LoopbackServer:
    """An HTTP server on loopback in a thread of its own, for the real client to talk to."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeOpenAI(LoopbackServer):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.replies: deque[Reply] = deque()
        self.image_replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.image_requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # of every request, in order (GET and POST)
        self.first_request_at: float | None = None
        self.stream_ended_at: float | None = None
        self.default_text = "ok"
        super().__init__(host, port)

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]

    def _next(self, queue: deque[Reply]) -> Reply:
        with self.lock:
            return queue.popleft() if queue else Reply(text=self.default_text)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.headers.append(dict(self.headers))
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-chat", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                fake.headers.append(dict(self.headers))
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if fake.first_request_at is None:
                    fake.first_request_at = time.time()
                if self.path.endswith("/images/generations"):
                    fake.image_requests.append(body)
                    self._image(fake._next(fake.image_replies), body)
                    return
                fake.requests.append(body)
                reply = fake._next(fake.replies)
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.status != 200:
                    code = {429: "rate_limit_exceeded", 404: "model_not_found", 401: "invalid_api_key"}.get(
                        reply.status
                    )
                    self._json(reply.status, {"error": {"message": reply.error_message, "type": "error", "code": code}})
                    return
                self._stream(reply, body.get("model", "fake"))

            def _image(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.error_message}})
                    return
                data = base64.b64encode(png_bytes()).decode()
                self._json(200, {"created": int(time.time()), "data": [{"b64_json": data}] * int(body.get("n", 1))})

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, reply: Reply, model: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = list(_chunks(reply, model))
                try:
                    for index, chunk in enumerate(chunks):
                        if reply.drop_after_chunks is not None and index >= reply.drop_after_chunks:
                            self.wfile.flush()
                            self.connection.shutdown(2)
                            return
                        if reply.hold is not None and (
                            index == reply.hold_after_chunks
                            if reply.hold_after_chunks is not None
                            else bool(chunk["choices"] and chunk["choices"][0]["finish_reason"])
                        ):
                            reply.hold.wait(300)
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                        self.wfile.flush()
                        if reply.chunk_delay_s:
                            time.sleep(reply.chunk_delay_s)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    fake.stream_ended_at = time.perf_counter()  # the last byte (bench/ measures from it)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        return Handler


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chunks(reply: Reply, model: str) -> Any:
    yield _chunk(model, {"role": "assistant", "content": ""})
    pieces = (
        reply.tokens
        if reply.tokens is not None
        else [reply.text[i : i + reply.chunk_size] for i in range(0, len(reply.text), reply.chunk_size)]
    )
    for piece in pieces:
        yield _chunk(model, {"content": piece})
    for index, (name, arguments) in enumerate(reply.tool_calls):
        call_id = f"call_{index}_{name}"
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        yield _chunk(model, {"tool_calls": [head]})
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            yield _chunk(model, {"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield _chunk(model, {}, "tool_calls" if reply.tool_calls else "stop")
    prompt_tokens = 10
    completion_tokens = max(1, len(reply.text) // 4)
    yield {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--text", default="Hello from the **fake** server.")
    options = parser.parse_args()
    fake = FakeOpenAI(port=options.port)
    fake.default_text = options.text
    print(fake.base_url, flush=True)
    fake.server.serve_forever()
