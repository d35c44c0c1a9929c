"""Benchmark the app in a real 120x40 pseudo-terminal against a local server streaming as fast as it can.

Reports medians over repeated runs of:
  - start -> first paint of the chat screen (the composer placeholder is drawn);
  - Enter -> the last of 2,000 streamed tokens visible;
  - opening a conversation of 5,000 messages (start -> first paint), and RSS after opening
    conversations of 500 and 5,000 messages (memory growth should not depend on length);
  - peak RSS of the whole app (VmHWM) after the 2,000-token reply.
Usage: python bench/bench_tui.py [--runs N]. Not a test: no thresholds.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fake_openai import FakeOpenAI, Reply  # noqa: E402

READY = b"Message (Enter sends"


class PtyApp:
    def __init__(self, vault: Path) -> None:
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(TUI_AGENT_VAULT=str(vault), TERM="xterm-256color", COLUMNS="120", LINES="40")
            os.execv(sys.executable, [sys.executable, "-m", "tui_agent"])
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.pid, self.fd = pid, fd
        self.buffer = b""

    def wait_for(self, marker: bytes, timeout: float = 60.0) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                self.buffer += chunk
                if self._answer_queries(chunk):
                    continue
                if marker in self.buffer[-(len(chunk) + len(marker)) :]:
                    return time.perf_counter()
        tail = self.buffer[-600:].decode("utf-8", "replace")
        raise TimeoutError(f"{marker!r} not seen; last output: {tail!r}")

    def _answer_queries(self, chunk: bytes) -> bool:
        # Answer the terminal probes textual-image sends (device attributes, cell size) like xterm.
        answered = False
        if b"\x1b[c" in chunk:
            os.write(self.fd, b"\x1b[?1;2c")
            answered = True
        if b"\x1b[16t" in chunk:
            os.write(self.fd, b"\x1b[6;20;10t")
            answered = True
        return answered

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def rss_kb(self, field: str = "VmRSS") -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def make_vault(base_url: str, messages: int = 0) -> Path:
    vault = Path(tempfile.mkdtemp()) / "vault"
    subprocess.run(
        [sys.executable, "-m", "tui_agent", "profile", "set", "base_url", base_url, "--vault", str(vault)],
        check=True,
        capture_output=True,
    )
    if messages:
        import sqlite3

        conn = sqlite3.connect(vault / "agent.db")
        conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES ('long', 'x', 'x')")
        conn.executemany(
            "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, ?, ?, 'x')",
            [("user" if i % 2 == 0 else "assistant", f"message {i}: " + "lorem ipsum " * 20) for i in range(messages)],
        )
        conn.commit()
        conn.close()
    return vault


def first_paint(vault: Path) -> tuple[float, int]:
    app = PtyApp(vault)
    try:
        painted = app.wait_for(READY)
        time.sleep(0.3)
        return painted - app.started, app.rss_kb()
    finally:
        app.close()


def stream(vault: Path, fake: FakeOpenAI) -> tuple[float, int]:
    tokens = [f" t{i}" for i in range(2000)]
    fake.script(Reply(tokens=tokens))
    app = PtyApp(vault)
    try:
        app.wait_for(READY)
        time.sleep(0.5)
        app.send(b"go")
        time.sleep(0.1)
        start = time.perf_counter()
        app.send(b"\r")
        done = app.wait_for(b"t1999")
        time.sleep(0.3)
        return done - start, app.rss_kb("VmHWM")
    finally:
        app.close()


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    fake = FakeOpenAI().start()
    empty = make_vault(fake.base_url)
    paints = [first_paint(empty)[0] for _ in range(runs)]
    print(f"start -> first paint (empty vault)        median {median(paints) * 1000:7.0f} ms  (runs {runs})")
    streams, peaks = [], []
    for _ in range(runs):
        vault = make_vault(fake.base_url)
        seconds, peak = stream(vault, fake)
        streams.append(seconds)
        peaks.append(peak)
        shutil.rmtree(vault.parent)
    print(f"Enter -> token 2,000 visible              median {median(streams) * 1000:7.0f} ms")
    print(f"peak RSS after the 2,000-token reply      median {median(peaks) / 1024:7.0f} MB")
    for size in (500, 5000):
        vault = make_vault(fake.base_url, size)
        results = [first_paint(vault) for _ in range(runs)]
        print(
            f"open {size:>5}-message conversation -> paint   median {median([r[0] for r in results]) * 1000:7.0f} ms"
            f"   RSS {median([r[1] for r in results]) / 1024:5.0f} MB"
        )
        shutil.rmtree(vault.parent)
    fake.stop()
    shutil.rmtree(empty.parent)


if __name__ == "__main__":
    main()
