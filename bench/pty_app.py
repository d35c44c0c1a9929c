"""Run a program in a real 120x40 pseudo-terminal and wait for text to be drawn."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

READY = b"Message (Enter sends"
ESCAPES = re.compile(
    rb"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[()][0-9A-Za-z]|[=>78MDEc])"
)
ROOT = Path(__file__).resolve().parent.parent
# The app, from the tui_agent on PYTHONPATH when one is set (a checkout to compare with): ``-P`` keeps
# the working directory off sys.path, where ``-m`` would put it first, so a benchmark run from this
# checkout's root measured this checkout on both sides of a comparison.
APP = (sys.executable, "-P", "-m", "tui_agent")


ANSWERS = {b"\x1b[16t": b"\x1b[6;20;10t", b"\x1b[c": b"\x1b[?1;2c"}


class PtyApp:
    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="40", **(env or {}))
            os.execv(argv[0], argv)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.pid, self.fd = pid, fd
        # Grown in place: a 500-turn session draws tens of megabytes, and ``bytes += chunk`` copied
        # all of it at every read, which the session's later turns were timed with.
        self.buffer = bytearray()
        self.plain = bytearray()  # the output without escape sequences (a styled word can be split by them)
        # Where the next search starts: right after the last marker found. Not where reading
        # stopped: a fast turn draws the composer's placeholder and the reply's end in one read.
        self.seen = 0

    @classmethod
    def agent(cls, vault: Path, env: dict[str, str] | None = None) -> PtyApp:
        return cls([*APP], {"TUI_AGENT_VAULT": str(vault), **(env or {})})

    @classmethod
    def bare(cls, env: dict[str, str] | None = None) -> PtyApp:
        return cls([sys.executable, str(ROOT / "bench" / "bare_app.py")], env)

    def wait_for(self, marker: bytes, timeout: float = 60.0) -> float:
        """The time the marker was seen drawn (searched from the end of the last marker found)."""
        self.wait_for_any((marker,), timeout)
        return time.perf_counter()

    def wait_for_any(self, markers: tuple[bytes, ...], timeout: float = 60.0) -> bytes:
        """The first of ``markers`` drawn (searched from the end of the marker the last call found:
        what one read brought after it counts too); if several are in the same output, the earliest
        in ``markers``."""
        deadline = time.perf_counter() + timeout
        while True:
            for marker in markers:
                found = self.plain.find(marker, self.seen)
                if found >= 0:
                    self.seen = found + len(marker)
                    return marker
            if time.perf_counter() >= deadline or not self._read(0.02):
                break
        tail = self.plain[-1500:].decode("utf-8", "replace")
        shown = " or ".join(repr(m) for m in markers)
        raise TimeoutError(f"{shown} not seen; last output: {tail!r}")

    def drain(self, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while (left := deadline - time.perf_counter()) > 0 and self._read(left):
            pass

    def _read(self, timeout: float) -> bool:
        """Take what the app drew within ``timeout``; False once the pty is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                self._add(os.read(self.fd, 1 << 20))
            except OSError:
                return False
        return True

    def _add(self, chunk: bytes) -> None:
        self.buffer += chunk
        self.plain += ESCAPES.sub(b"", chunk)
        self._answer_queries(chunk)

    def _answer_queries(self, chunk: bytes) -> None:
        # Answer the terminal probes (cell size, device attributes) like xterm: in the order they
        # were asked, in one write. A real terminal answers DA1 last, and a probe stops reading at
        # DA1; an answer written after it would be typed into the app.
        asked = sorted((chunk.find(q), a) for q, a in ANSWERS.items() if q in chunk)
        if asked:
            os.write(self.fd, b"".join(answer for _, answer in asked))

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def rss_mb(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> float:
        """CPU time the app has used so far (user + system, all threads): what it did, without
        what it waited for (the host's speed still moves it)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def echo_s(self, probe: bytes = b"zqx") -> float:
        """Keystroke echo: type a prefix, then time one more key until the composer shows it."""
        self.send(probe)
        self.wait_for(probe)
        self.drain(0.2)
        start = time.perf_counter()
        self.send(b"j")
        done = self.wait_for(probe + b"j")
        for _ in range(4):
            self.send(b"\x7f")
        self.drain(0.2)
        return done - start

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def make_vault(base_url: str) -> Path:
    vault = Path(tempfile.mkdtemp(prefix="bench-")) / "vault"
    subprocess.run(
        [sys.executable, "-m", "tui_agent", "profile", "set", "base_url", base_url, "--vault", str(vault)],
        check=True,
        capture_output=True,
    )
    return vault
