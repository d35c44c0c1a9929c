"""Context building for a 400-message window with 50 images: the first build and the next ones."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from PIL import Image

from tui_agent.core import image_cache, profiles
from tui_agent.core.context import ContextBuilder
from tui_agent.core.store import history, location
from tui_agent.core.store.db import open_store
from tui_agent.core.vault import Vault


def measure(repeats: int = 10, url: str | None = None) -> dict[str, float]:
    """``url``: the store (default: the vault's own SQLite file); a PostgreSQL one must be empty."""
    vault = Vault(Path(tempfile.mkdtemp(prefix="bench-ctx-")) / "vault").init()
    db = open_store(location.parse(url) if url else location.default_url(vault.root))
    profiles.ensure_default_profile()
    profile = profiles.active_profile()
    profile.context_budget_tokens = 10_000_000
    # A chat model that takes images: every image of the window goes as pixels (otherwise only the
    # current turn's would, and this window's 50 would be short notes that cost nothing to build).
    profile.chat_accepts_images = "yes"
    conversation = history.new_conversation("images").id
    vault.media.mkdir(parents=True, exist_ok=True)
    noise = Image.effect_noise((512, 512), 64).convert("RGB")
    for i in range(400):
        attachments = []
        if i % 8 == 0:  # 50 images of ~0.5 MB each (noise does not compress)
            noise.save(vault.media / f"p{i}.png")
            attachments = [f"media/p{i}.png"]
        history.add_message(conversation, "user" if i % 2 == 0 else "assistant", f"m{i} " * 50, attachments=attachments)
    builder = ContextBuilder(vault)
    image_cache.cache.clear()
    start = time.perf_counter()
    messages = builder.build(conversation, profile)
    first = time.perf_counter() - start
    again = []
    for _ in range(repeats):
        start = time.perf_counter()
        builder.build(conversation, profile)
        again.append(time.perf_counter() - start)
    db.close()
    images = sum(1 for m in messages if isinstance(m["content"], list))
    return {"first_s": first, "again_s": statistics.median(again), "images": images, "messages": len(messages)}


if __name__ == "__main__":
    print(measure())
