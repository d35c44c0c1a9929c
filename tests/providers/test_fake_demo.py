"""The loopback server the README's "New here?" starts (``python tests/fake_openai.py``) is worth
meeting (issue 37 item 5): with the whole working path set (``base_url`` and the ``image_*``
fields), a message asking for a picture makes the "model" call the image tool, the picture is more
than a flat square, and the reply after it says what it is; `/imagine` ends in words, not in
"can't reach the model"."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv
from PIL import Image
from repo_paths import ROOT


@pytest.fixture
def demo(tmp_path):
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_openai.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    yield base_url
    server.kill()
    server.wait()


def tui(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "--vault", str(vault), *args]
    environment = {k: v for k, v in os.environ.items() if k != "TUI_AGENT_DB"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=environment)


def test_the_readme_path_against_the_loopback_demo_draws_a_picture_and_answers(demo, tmp_path):
    assert demo.startswith("http://127.0.0.1:") and demo.endswith("/v1")
    vault = tmp_path / "vault"
    # The README's "New here?" lines, base_url included (the chat goes there too).
    for key, value in [
        ("base_url", demo),
        ("api_key_env", ""),
        ("image_backend", "openai"),
        ("image_base_url", demo),
        ("image_model", "gpt-image-1"),
    ]:
        done = tui(vault, "profile", "set", key, value)
        assert done.returncode == 0, done.stderr
    asked = tui(vault, "ask", "--new", "draw a red fox in the snow")
    assert asked.returncode == 0, asked.stderr
    assert "→ generate_image" in asked.stderr and "← generate_image: ok" in asked.stderr
    assert "Here is the picture" in asked.stdout
    (picture,) = (vault / "media").rglob("*.png")
    with Image.open(picture) as drawn:
        assert drawn.size == (512, 384)
        assert len(drawn.convert("RGB").getcolors(1 << 20) or []) > 200  # a picture, not a flat square
    imagined = tui(vault, "ask", "/imagine a lighthouse at dusk")
    assert imagined.returncode == 0, imagined.stderr
    assert "can't reach" not in imagined.stderr and "Here is the picture" in imagined.stdout
    assert len(list((vault / "media" / "imagine").rglob("*.png"))) == 2  # /imagine makes two


def test_a_plain_message_gets_words_and_the_same_prompt_draws_the_same_picture(demo, tmp_path):
    from openai import OpenAI

    client = OpenAI(base_url=demo, api_key="x", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "loopback demo" in text
    first = client.images.generate(model="gpt-image-1", prompt="a boat")
    again = client.images.generate(model="gpt-image-1", prompt="a boat")
    other = client.images.generate(model="gpt-image-1", prompt="a house")
    assert first.data and again.data and other.data
    assert first.data[0].b64_json == again.data[0].b64_json != other.data[0].b64_json
    import base64

    with Image.open(io.BytesIO(base64.b64decode(first.data[0].b64_json or ""))) as drawn:
        assert drawn.size == (512, 384)
