"""Context building reads each image once: encoded images are cached by path, mtime and size."""

from __future__ import annotations

import base64
import os

import pytest
from fake_openai import png_bytes

from tui_agent.core import image_cache
from tui_agent.core.context import ContextBuilder
from tui_agent.core.store import history


def _conversation_with_images(env, images: int, messages: int) -> int:
    conversation = history.new_conversation("images").id
    for i in range(images):
        path = env.vault.media / f"pic{i}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes((i * 5 % 256, 10, 10)))
        history.add_message(conversation, "user", f"image {i}", attachments=[f"media/pic{i}.png"])
        history.add_message(conversation, "assistant", f"seen {i}")
    for i in range(messages - 2 * images):
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", f"text {i}")
    return conversation


def _image_urls(messages: list[dict]) -> list[str]:
    return [
        part["image_url"]["url"]
        for m in messages
        if isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]


@pytest.mark.slow
def test_second_build_reads_no_image_from_disk(env):
    image_cache.cache.clear()
    conversation = _conversation_with_images(env, images=50, messages=400)
    builder = ContextBuilder(env.vault)
    env.profile.context_budget_tokens = 10_000_000
    env.profile.chat_accepts_images = "yes"  # a chat model that takes images: every image goes as pixels
    before = image_cache.cache.misses
    first = builder.build(conversation, env.profile)
    assert image_cache.cache.misses - before == 50
    hits = image_cache.cache.hits
    second = builder.build(conversation, env.profile)
    assert image_cache.cache.misses - before == 50  # nothing read again
    assert image_cache.cache.hits - hits == 50
    assert _image_urls(first) == _image_urls(second)
    assert len(_image_urls(second)) == 50


def test_changed_file_is_read_again(tmp_path):
    cache = image_cache.ImageCache()
    path = tmp_path / "a.png"
    path.write_bytes(b"first")
    assert base64.b64decode(cache.encoded(path)) == b"first"
    path.write_bytes(b"second!")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert base64.b64decode(cache.encoded(path)) == b"second!"
    assert cache.misses == 2


def test_cache_is_bounded_and_missing_files_raise(tmp_path):
    cache = image_cache.ImageCache(max_bytes=40)
    for i in range(5):
        (tmp_path / f"{i}.bin").write_bytes(bytes(20))
        cache.encoded(tmp_path / f"{i}.bin")
    assert cache._size <= 40
    assert len(cache._entries) == 1  # 28 base64 chars each: only the newest fits
    with pytest.raises(OSError):
        cache.encoded(tmp_path / "gone.png")
