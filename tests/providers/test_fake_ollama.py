"""The loopback server's Ollama API (tests/fake_ollama.py), which bench/peers.py points oterm at:
a scripted reply streams from ``POST /api/chat`` as NDJSON, one object a line as Ollama documents
(docs/api.md in github.com/ollama/ollama), and the endpoints a client calls first answer in
Ollama's shapes. Read with the standard library's HTTP client (neither the ``ollama`` package nor
httpx is a dependency of ours)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_ollama import MODEL, FakeOllama
from fake_openai import Reply


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    server = FakeOllama().start()
    yield server
    server.stop()


def call(server: FakeOllama, method: str, path: str, body: dict[str, Any] | None = None) -> http.client.HTTPResponse:
    host, port = server.server.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=30)
    connection.request(method, path, body=json.dumps(body) if body is not None else None)
    return connection.getresponse()


def test_a_scripted_reply_streams_from_api_chat_as_ndjson_and_ends_with_done(ollama):
    ollama.script(Reply(tokens=["## Title\n\n", "one ", "two ", "ENDOFREPLY"], tokens_per_s=200))
    response = call(ollama, "POST", "/api/chat", {"model": MODEL, "messages": [{"role": "user", "content": "go"}]})
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/x-ndjson"
    lines = [json.loads(line) for line in response.read().decode().splitlines()]
    assert [line["message"]["content"] for line in lines[:-1]] == ["## Title\n\n", "one ", "two ", "ENDOFREPLY"]
    assert all(line["done"] is False and line["message"]["role"] == "assistant" for line in lines[:-1])
    assert lines[-1]["done"] is True and lines[-1]["done_reason"] == "stop" and lines[-1]["eval_count"] == 4
    assert ollama.chat_requests[-1]["messages"] == [{"role": "user", "content": "go"}]


def test_api_chat_without_streaming_answers_one_object_and_errors_are_ollamas(ollama):
    ollama.script(Reply(text="Hello! How are you today?"), Reply(status=404, error_message="model 'x' not found"))
    whole = json.loads(call(ollama, "POST", "/api/chat", {"model": MODEL, "messages": [], "stream": False}).read())
    assert whole["message"] == {"role": "assistant", "content": "Hello! How are you today?"} and whole["done"] is True
    failed = call(ollama, "POST", "/api/chat", {"model": "x", "messages": []})
    assert failed.status == 404 and json.loads(failed.read()) == {"error": "model 'x' not found"}


def test_the_endpoints_a_client_calls_first_answer_in_ollamas_shapes(ollama):
    assert [m["model"] for m in json.loads(call(ollama, "GET", "/api/tags").read())["models"]] == [MODEL]
    shown = json.loads(call(ollama, "POST", "/api/show", {"model": MODEL}).read())
    assert shown["capabilities"] == ["completion"] and shown["details"]["family"] == "llama"
    assert json.loads(call(ollama, "GET", "/api/ps").read())["models"][0]["context_length"] == 8192
    assert "version" in json.loads(call(ollama, "GET", "/api/version").read())
    # The OpenAI-compatible API stays beside it (Ollama serves both on one host).
    assert json.loads(call(ollama, "GET", "/v1/models").read())["data"][0]["id"] == "fake-chat"
