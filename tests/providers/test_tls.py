"""HTTPS endpoints: the TLS context built ahead of the first request (core/tls) verifies
certificates the way the HTTP client's own would, ``SSL_CERT_FILE`` included.

Each case runs in a fresh interpreter: the context is built once per run."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make a certificate: apt-get install openssl"
)

CLIENT = """
import asyncio, json
from tui_agent.core.llm import LLMClient, LLMError
async def main():
    client = LLMClient({url!r}, "key", max_attempts=1, timeout=10)
    try:
        pieces = [p async for p in client.stream(model="m", messages=[{{"role": "user", "content": "hi"}}])]
        return ["ok", pieces[-1].text]
    except LLMError as exc:
        return ["error", str(exc)]
    finally:
        await client.close()
print(json.dumps(asyncio.run(main())))
"""


@pytest.fixture
def https_server(tmp_path: Path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [*request, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = FakeOpenAI()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
    server.start()
    host, port = server.server.server_address[:2]
    yield server, f"https://{host}:{port}/v1", cert
    server.stop()


def ask(url: str, env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    result = subprocess.run(
        [sys.executable, "-c", CLIENT.format(url=url)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_certificate_the_system_trusts_is_accepted(https_server):
    server, url, cert = https_server
    server.script(Reply(text="over TLS"))
    assert ask(url, {"SSL_CERT_FILE": str(cert)}) == ["ok", "over TLS"]


@pytest.mark.slow
def test_an_unknown_certificate_is_refused(https_server):
    server, url, _ = https_server
    server.script(Reply(text="must not be read"))
    outcome, message = ask(url, {})
    assert outcome == "error"
    assert "TLS certificate this machine does not trust" in message, message
    assert "self-signed" in message or "self signed" in message  # the reason, from OpenSSL
    assert server.chat_requests == []  # nothing was sent over the untrusted connection
