"""A small OpenAI-compatible server on loopback for tests and benchmarks.

It streams text and tool calls, serves ``/v1/images/generations`` and ``/v1/images/edits``
(multipart, parsed: every field and file is recorded), can be scripted to fail
(status codes, malformed tool-call JSON, a connection dropped mid-stream, a hang) and records
every request body. Run it alone with ``python tests/fake_openai.py --port 8765``: then it is a
demo worth meeting (``demo=True``): asked for a picture ("draw ...", "a picture of ..."), it calls
the image tool; after the tool, it says what it made; its images endpoint draws a picture of the
prompt (gradients, shapes and the prompt's words, 512x384), not a flat square.
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import email.policy
import hashlib
import io
import json
import re
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
    tokens_per_s: float = 0.0  # pace the text pieces at this rate from the first (0: as fast as it can)
    reasoning: list[str] | None = None  # pieces of reasoning streamed before the text (DeepSeek's reasoning_content)


def reencoded(png: bytes, kind: str) -> bytes:
    """The picture ``png`` as a ``kind`` ("jpeg", "webp") file."""
    from PIL import Image

    out = io.BytesIO()
    with Image.open(io.BytesIO(png)) as image:
        image.convert("RGB").save(out, kind.upper())
    return out.getvalue()


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (16, 12)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


PICTURE_WORDS = re.compile(r"\b(draw|paint|sketch|picture|image|photo|imagine)\b", re.IGNORECASE)


def demo_png(prompt: str, size: tuple[int, int] = (512, 384)) -> bytes:
    """A picture of ``prompt`` for the demo: a gradient, shapes and the prompt's words, its colours
    chosen by the prompt (the same prompt draws the same picture)."""
    from PIL import Image, ImageDraw

    seed = hashlib.sha256(prompt.encode()).digest()
    width, height = size
    top, bottom = (seed[0], seed[1], seed[2]), (seed[3], seed[4], seed[5])
    picture = Image.new("RGB", size)
    draw = ImageDraw.Draw(picture)
    for y in range(height):  # a vertical gradient between two colours of the prompt
        t = y / (height - 1)
        draw.line((0, y, width, y), fill=tuple(int(a + (b - a) * t) for a, b in zip(top, bottom, strict=True)))
    for i in range(6):  # shapes: circles and boxes, placed and coloured by the prompt
        x, y, r = seed[6 + i] * width // 256, seed[12 + i] * height // 256, 20 + seed[18 + i] % 60
        colour = (seed[(i * 3) % 32], seed[(i * 3 + 1) % 32], seed[(i * 3 + 2) % 32])
        box = (x - r, y - r, x + r, y + r)
        if i % 2:
            draw.rectangle(box, fill=colour, outline=(0, 0, 0), width=3)
        else:
            draw.ellipse(box, fill=colour, outline=(255, 255, 255), width=3)
    words = prompt[:60]
    draw.rectangle((0, height - 28, width, height), fill=(0, 0, 0))
    draw.text((10, height - 22), f"loopback demo: {words}", fill=(255, 255, 255))
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def demo_reply(messages: list[dict[str, Any]]) -> Reply:
    """What the demo answers: the image tool for a picture asked for, a few words after it."""
    last = messages[-1] if messages else {}
    text = last.get("content")
    if isinstance(text, list):  # a message with an image: its text parts
        text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    text = str(text or "")
    if last.get("role") == "tool" or "image data" in text or "generate_image" in text:
        return Reply(
            text="Here is the picture (drawn by the loopback demo server, not a model: point `base_url` "
            "and `image_base_url` at a real provider for real answers)."
        )
    if last.get("role") == "user" and PICTURE_WORDS.search(text):
        prompt = PICTURE_WORDS.sub("", text).strip(" .!?,:") or text
        slug = re.sub(r"[^a-z0-9]+", "-", prompt.lower()).strip("-")[:40] or "picture"
        arguments = {"prompt": prompt, "path": f"demo/{slug}.png", "count": 1, "reason": "you asked for a picture"}
        return Reply(tool_calls=[("generate_image", json.dumps(arguments))])
    return Reply(
        text="Hello from the loopback demo server. Ask me to *draw* something, or type `/imagine a fox in the snow`."
    )


#: How often the server's loop looks for ``stop``: ``serve_forever``'s default (0.5 s) made every
#: test using the server wait up to half a second at its end (0.4 s median, on ~1,000 tests).
POLL_S = 0.02


def pace_or_drop(handler: BaseHTTPRequestHandler, reply: Reply, index: int, due: float | None) -> bool:
    """Before piece ``index`` of a streamed reply: sleep until ``due`` (a reply paced in tokens a
    second), then True if the reply drops the connection here (``drop_after_chunks``): it is shut,
    and the stream ends without another byte."""
    if due is not None and (ahead := due - time.perf_counter()) > 0:
        time.sleep(ahead)
    if reply.drop_after_chunks is not None and index >= reply.drop_after_chunks:
        handler.wfile.flush()
        handler.connection.shutdown(2)
        return True
    return False


class LoopbackServer:
    """An HTTP server on loopback in a thread of its own, for the real client to talk to."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True)

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
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, demo: bool = False) -> None:
        self.demo = demo  # answer like a small model (the tests script their replies instead)
        self.replies: deque[Reply] = deque()
        self.image_replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.image_requests: list[dict[str, Any]] = []
        self.edit_replies: deque[Reply] = deque()
        self.edit_requests: list[EditRequest] = []
        self.edit_answer = "b64_json"  # "url": served at /v1/files/<n>.png; "data_url": a data: URL
        self.edits_enabled = True  # False: /images/edits answers 404, like a server that only generates
        # What /images/generations answers with: "png", or "jpeg" / "webp" as gpt-image models do when
        # asked (OpenAI's API reference, Images: output_format "png", "jpeg" or "webp"; b64_json).
        self.image_format = "png"
        self.served_files: dict[str, bytes] = {}
        self.headers: list[dict[str, str]] = []  # of every request, in order (GET and POST)
        self.first_request_at: float | None = None
        self.stream_ended_at: float | None = None
        self.stream_started_at: float | None = None  # perf_counter of the last reply's first chunk
        self.default_text = "ok"
        # Extra endpoints (a server's own model endpoints): (method, path) -> body -> (status, JSON).
        self.routes: dict[tuple[str, str], Any] = {}
        # usage.prompt_tokens of a reply from the request body (default: 10).
        self.prompt_tokens: Any = None
        self.default_reply: Reply | None = None  # answers every unscripted request (default_text if None)
        super().__init__(host, port)

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]

    def _next(self, queue: deque[Reply]) -> Reply:
        with self.lock:
            if queue:
                return queue.popleft()
            return self.default_reply or Reply(text=self.default_text)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.headers.append(dict(self.headers))
                served = fake.served_files.get(self.path.rsplit("/", 1)[-1])
                if ("GET", self.path) in fake.routes:
                    self._json(*fake.routes["GET", self.path]({}))
                elif self.path.startswith("/v1/files/") and served is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "image/png")
                    self.send_header("Content-Length", str(len(served)))
                    self.end_headers()
                    self.wfile.write(served)
                elif self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-chat", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                fake.headers.append(dict(self.headers))
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if ("POST", self.path) in fake.routes:
                    self._json(*fake.routes["POST", self.path](json.loads(raw or b"{}")))
                    return
                if fake.first_request_at is None:
                    fake.first_request_at = time.time()
                if self.path.endswith("/images/edits"):
                    self._edit(raw)
                    return
                body = json.loads(raw or b"{}")
                if self.path.endswith("/images/generations"):
                    fake.image_requests.append(body)
                    self._image(fake._next(fake.image_replies), body)
                    return
                fake.requests.append(body)
                if fake.demo and not fake.replies:
                    reply = demo_reply(body.get("messages") or [])
                else:
                    reply = fake._next(fake.replies)
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.status != 200:
                    code = {429: "rate_limit_exceeded", 404: "model_not_found", 401: "invalid_api_key"}.get(
                        reply.status
                    )
                    self._json(reply.status, {"error": {"message": reply.error_message, "type": "error", "code": code}})
                    return
                prompt_tokens = fake.prompt_tokens(body) if fake.prompt_tokens is not None else 10
                self._stream(reply, body.get("model", "fake"), prompt_tokens)

            def _image(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.error_message}})
                    return
                picture = demo_png(str(body.get("prompt", ""))) if fake.demo else png_bytes()
                if fake.image_format != "png":
                    picture = reencoded(picture, fake.image_format)
                data = base64.b64encode(picture).decode()
                self._json(200, {"created": int(time.time()), "data": [{"b64_json": data}] * int(body.get("n", 1))})

            def _edit(self, raw: bytes) -> None:
                if not fake.edits_enabled:
                    self._json(404, {"error": {"message": "404 page not found"}})
                    return
                request = parse_multipart(self.headers.get("content-type", ""), raw)
                fake.edit_requests.append(request)
                reply = fake._next(fake.edit_replies)
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.error_message}})
                    return
                picture = edited_png(request.files["image"].data if "image" in request.files else b"")
                count = int(request.fields.get("n", "1"))
                if fake.edit_answer == "data_url":
                    item = {"url": "data:image/png;base64," + base64.b64encode(picture).decode()}
                elif fake.edit_answer == "url":
                    name = f"{len(fake.served_files)}.png"
                    fake.served_files[name] = picture
                    host, port = fake.server.server_address[:2]
                    item = {"url": f"http://{host}:{port}/v1/files/{name}"}
                else:
                    item = {"b64_json": base64.b64encode(picture).decode()}
                self._json(200, {"created": int(time.time()), "data": [item] * count})

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

            def _stream(self, reply: Reply, model: str, prompt_tokens: int = 10) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = list(_chunks(reply, model, prompt_tokens))
                started = fake.stream_started_at = time.perf_counter()
                try:
                    for index, chunk in enumerate(chunks):
                        # Against a schedule (sleeps do not add up); the first chunk is the role's.
                        due = started + (index - 1) / reply.tokens_per_s if reply.tokens_per_s and index else None
                        if pace_or_drop(self, reply, index, due):
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


@dataclass
class Upload:
    filename: str
    content_type: str
    data: bytes


@dataclass
class EditRequest:
    """One ``POST /v1/images/edits`` as the server read it from its multipart body."""

    content_type: str
    fields: dict[str, str]
    files: dict[str, Upload]


def parse_multipart(content_type: str, raw: bytes) -> EditRequest:
    """Read a ``multipart/form-data`` body with the standard library's MIME parser."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    fields: dict[str, str] = {}
    files: dict[str, Upload] = {}
    if message.is_multipart():
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_param("filename", header="content-disposition")
            data = part.get_payload(decode=True) or b""
            if filename is not None:
                files[str(name)] = Upload(str(filename), part.get_content_type(), data)
            else:
                fields[str(name)] = data.decode()
    return EditRequest(content_type, fields, files)


def edited_png(source: bytes) -> bytes:
    """The "edited" picture: the source's size, bluer (a real PNG the tests can tell from the source)."""
    from PIL import Image

    size = (16, 12)
    try:
        with Image.open(io.BytesIO(source)) as picture:
            size = picture.size
    except Exception:
        pass
    return png_bytes((20, 40, 230), size)


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chunks(reply: Reply, model: str, prompt_tokens: int = 10) -> Any:
    yield _chunk(model, {"role": "assistant", "content": ""})
    for thought in reply.reasoning or ():
        yield _chunk(model, {"reasoning_content": thought})
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


# Pieces of a model's Markdown reply: headings, paragraphs with inline styles and links, lists,
# code blocks, tables and quotes, as a long answer has them.
_MD_SECTIONS = (
    "## Section {n}: what changes\n\n",
    "The **cache** keeps each *finished* block, and only the `last` one is parsed again; see"
    " [the notes](https://example.org/notes/{n}) for why. A reply of this size arrives in seconds"
    " from a fast provider, so every frame counts.\n\n",
    "- first point of list {n}, with `inline code`\n- second point, **bold** and *italic*\n"
    "- third point: a longer item that wraps over the end of a line in a narrow terminal window\n\n",
    "```python\ndef step_{n}(items):\n    total = 0\n    for item in items:\n        total += item * {n}\n"
    "    return total\n```\n\n",
    "| column | value {n} | note |\n|---|---|---|\n| a | {n} | first |\n| b | {n}.5 | second |\n\n",
    "> A quote in section {n}: the reader sees it as it comes, block after block.\n\n",
    "1. one\n2. two, with a [link](https://example.org/{n})\n3. three\n\n",
)


def markdown_tokens(count: int, end: str = " ENDOFREPLY") -> list[str]:
    """``count`` streamed pieces (about 4 characters each, like a model's tokens) of a long Markdown
    reply, the last of them ``end``."""
    pieces: list[str] = []
    n = 0
    while len(pieces) < count - 1:
        section = "".join(part.format(n=n) for part in _MD_SECTIONS)
        pieces.extend(section[i : i + 4] for i in range(0, len(section), 4))
        n += 1
    return [*pieces[: count - 1], end]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--text", default="", help="answer every message with this text (no demo)")
    parser.add_argument("--markdown", type=int, metavar="TOKENS", help="answer with a Markdown reply this long")
    parser.add_argument("--rate", type=float, default=400.0, help="tokens per second of --markdown (0: at once)")
    options = parser.parse_args()
    fake = FakeOpenAI(port=options.port, demo=not (options.text or options.markdown))
    fake.default_text = options.text or "ok"
    if options.markdown:
        fake.default_reply = Reply(tokens=markdown_tokens(options.markdown), tokens_per_s=options.rate)
    print(fake.base_url, flush=True)
    fake.server.serve_forever()
