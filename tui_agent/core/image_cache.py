"""Base64-encoded images for requests, cached by path, mtime and size (an image is read once)."""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from pathlib import Path

MAX_BYTES = 256 * 1024 * 1024  # encoded text kept in memory; the least recently used go first


class ImageCache:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[int, int, str]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def encoded(self, path: Path, prefix: str = "") -> str:
        """``prefix`` + the file's bytes as base64 text; raises OSError when it cannot be read."""
        stat = path.stat()
        key = prefix + str(path)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[2]
        data = prefix + base64.b64encode(path.read_bytes()).decode("ascii")
        with self._lock:
            self.misses += 1
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= len(old[2])
            if len(data) <= self.max_bytes:
                self._entries[key] = (stat.st_mtime_ns, stat.st_size, data)
                self._size += len(data)
            while self._size > self.max_bytes and self._entries:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._size -= len(dropped)
        return data

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0


cache = ImageCache()


def encoded(path: Path) -> str:
    return cache.encoded(path)


def data_url(path: Path, mime: str) -> str:
    """``data:MIME;base64,...`` built once per file version (a new 1 MB string per request is costly)."""
    return cache.encoded(path, f"data:{mime};base64,")
