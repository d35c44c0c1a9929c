"""Typing while a long Markdown reply streams: `python bench/stream_echo.py [--tokens 8000] [--rate 400]`.

A real app in a 120x40 pty (or in tmux with ``--tmux``: keys sent with ``send-keys``, the screen
read with ``capture-pane``) against the loopback server streaming a Markdown reply
(``tests/fake_openai.markdown_tokens``) at ``--rate`` tokens a second. Once its first words are on
screen a key is typed every ``--every`` seconds, on a clock, until the reply's last word shows; each
key's echo is the time until the composer shows it (the typed text, read from the screen). Reported
per third of the reply (by when the key was typed), with the app's CPU time per 1,000 tokens at the
start and at the end of the reply.

Also used by bench/peers.py (the same measurement for other chat apps)."""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from fake_openai import FakeOpenAI, Reply, markdown_tokens  # noqa: E402
from pty_app import APP, READY, PtyApp, make_vault  # noqa: E402

# Typed one key at a time after a marker no reply contains ("ZZA", then "ZZB", ...: the composer is
# emptied every ROUND keys), so the composer showing the marker and the first n keys can only be
# the n-th key's echo.
TYPED = "qzjxkqvzjwxqkzvjqxwkzqjvxkwqzjxvkqwzjxkv"
ROUND = len(TYPED)


def shown_after(keys: int) -> str:
    """What the composer shows after ``keys`` measured keys (1-based)."""
    r, n = divmod(keys - 1, ROUND)
    return f"ZZ{chr(ord('A') + r % 26)}" + TYPED[: n + 1]


END = "ENDOFREPLY"
FIRST = b"Section 0"


@dataclass
class EchoRun:
    echoes: list[tuple[float, float]] = field(default_factory=list)  # (typed at, echo s) per key
    missed: int = 0  # keys never echoed before the reply ended (+ 2 s)
    first_words: float = 0.0
    last_word: float = 0.0
    cpu_marks: list[tuple[float, float]] = field(default_factory=list)  # (time, app CPU s)
    unfinished: bool = False  # the reply's last word was not on screen within the time allowed
    after_end: list[float] = field(default_factory=list)  # echo s of the keys typed on after the last word

    def thirds(self) -> list[list[float]]:
        span = (self.last_word - self.first_words) / 3
        parts: list[list[float]] = [[], [], []]
        for at, echo in self.echoes:
            parts[min(2, max(0, int((at - self.first_words) / span)))].append(echo)
        return parts

    def summary(self) -> dict[str, float]:
        every = sorted(e for _, e in self.echoes)
        thirds = [statistics.median(t) if t else float("nan") for t in self.thirds()]
        return {
            "keys": len(every),
            "missed": self.missed,
            "median_ms": statistics.median(every) * 1000,
            "p90_ms": every[int(len(every) * 0.9)] * 1000,
            "max_ms": every[-1] * 1000,
            "first_third_ms": thirds[0] * 1000,
            "middle_third_ms": thirds[1] * 1000,
            "last_third_ms": thirds[2] * 1000,
            "reply_s": self.last_word - self.first_words,
        } | ({"after_end_max_ms": max(self.after_end) * 1000} if self.after_end else {})

    def cpu_between(self, start: float, end: float) -> float:
        """The app's CPU seconds between two moments (interpolated between the samples)."""

        def at(t: float) -> float:
            marks = self.cpu_marks
            for (t0, c0), (t1, c1) in itertools.pairwise(marks):
                if t0 <= t <= t1:
                    return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0)
            return marks[-1][1] if t > marks[-1][0] else marks[0][1]

        return at(end) - at(start)


class Screen:
    """What a test reads and types: a pty (default) or a tmux pane."""

    def __init__(self, app: PtyApp) -> None:
        self.app = app

    def type(self, keys: bytes) -> None:
        self.app.send(keys)

    def mark(self) -> int:
        return len(self.app.plain)

    def shows(self, text: bytes, since: int) -> bool:
        return self.app.plain.find(text, since) >= 0

    def read(self, timeout: float) -> bool:
        return self.app._read(timeout)

    def cpu_s(self) -> float:
        return self.app.cpu_s()


class TmuxScreen(Screen):
    """The app in a detached tmux session of 120x40: keys by ``send-keys``, the screen by ``capture-pane``."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.session = f"echo{int(time.time() * 1000) % 10**8}"
        exports = " ".join(f"{k}={shlex_quote(v)}" for k, v in env.items())
        command = f"env {exports} {' '.join(shlex_quote(a) for a in argv)}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.session, "-x", "120", "-y", "40", command], check=True)
        self.screen = ""
        self.pid = int(self._tmux("display-message", "-p", "-t", self.session, "#{pane_pid}").strip())

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout

    def type(self, keys: bytes) -> None:
        text = keys.decode()
        if text == "\r":
            self._tmux("send-keys", "-t", self.session, "Enter")
        else:
            self._tmux("send-keys", "-t", self.session, "-l", text)

    def mark(self) -> int:
        return 0

    def shows(self, text: bytes, since: int) -> bool:
        return text.decode() in self.screen

    def read(self, timeout: float) -> bool:
        time.sleep(min(max(timeout, 0.02), 0.02))  # capture-pane is a process: not too often
        self.screen = self._tmux("capture-pane", "-p", "-t", self.session)
        return True

    def cpu_s(self) -> float:
        return PtyApp.cpu_s(self)  # type: ignore[arg-type]  # reads /proc/<self.pid>/stat

    def close(self) -> None:
        self._tmux("kill-session", "-t", self.session)


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def wait_shown(screen: Screen, text: bytes, since: int, timeout: float) -> float:
    deadline = time.perf_counter() + timeout
    while not screen.shows(text, since):
        if time.perf_counter() > deadline:
            tail = screen.app.plain[-800:] if hasattr(screen, "app") else screen.screen  # type: ignore[attr-defined]
            raise TimeoutError(f"{text!r} not shown in {timeout} s; the screen ends with {tail!r}")
        screen.read(0.005)
    return time.perf_counter()


def type_during_reply(
    screen: Screen,
    fake: FakeOpenAI,
    *,
    tokens: int,
    rate: float,
    every: float,
    send: bytes = b"go\r",
    give_up_s: float = 600,
    partial: bool = False,
    reasoning: bool = False,
    after_end: int = 0,
) -> EchoRun:
    """Send a message, then type a key every ``every`` s until the reply's last word is on screen
    (and ``after_end`` keys more, on the same clock: their echoes apart, in ``run.after_end``).
    After ``give_up_s`` without it: an error, or with ``partial`` the keys measured so far (the run
    marked unfinished, the keys still waiting counted missed)."""
    fake.script(reply(tokens, rate, reasoning))
    run = EchoRun()
    since = screen.mark()
    for key in send[:-1]:
        screen.type(bytes([key]))
        screen.read(0.02)
    screen.type(send[-1:])
    run.first_words = wait_shown(screen, FIRST, since, 60)
    run.cpu_marks.append((run.first_words, screen.cpu_s()))
    pending: list[tuple[int, float, int, bool]] = []  # (keys typed, typed at, screen mark, after the end)
    typed = 0
    screen.type(shown_after(1)[:3].encode())  # the first marker, before the first measured key
    next_key = run.first_words + every
    end_seen: float | None = None
    late = 0  # keys typed after the last word was seen
    while True:
        now = time.perf_counter()
        if (end_seen is None or late < after_end) and now >= next_key:
            typed += 1
            late += end_seen is not None
            if typed > 1 and (typed - 1) % ROUND == 0:  # empty the composer, then the next marker
                screen.type(b"\x7f" * (ROUND + 3) + shown_after(typed)[:3].encode())
                now = time.perf_counter()
            pending.append((typed, now, screen.mark(), end_seen is not None))
            screen.type(shown_after(typed)[-1].encode())
            next_key += every
            run.cpu_marks.append((now, screen.cpu_s()))
        screen.read(0.003)
        found = time.perf_counter()
        for item in list(pending):
            count, at, mark, after = item
            if screen.shows(shown_after(count).encode(), mark):
                if after:
                    run.after_end.append(found - at)
                else:
                    run.echoes.append((at, found - at))
                pending.remove(item)
        if end_seen is None and screen.shows(END.encode(), since):
            end_seen = run.last_word = found
            run.cpu_marks.append((found, screen.cpu_s()))
        if end_seen is not None and late >= after_end and (not pending or found - max(end_seen, next_key - every) > 2):
            run.missed = len(pending)
            return run
        if end_seen is None and found - run.first_words > give_up_s:
            if not partial:
                raise TimeoutError(f"the reply did not end in {give_up_s:.0f} s")
            run.unfinished, run.last_word, run.missed = True, found, len(pending)
            return run


def reply(tokens: int, rate: float, reasoning: bool) -> Reply:
    """The long Markdown reply; with ``reasoning``, the same text streamed as the model's reasoning
    (a "Thinking" block), then an answer of one word."""
    if reasoning:
        return Reply(reasoning=markdown_tokens(tokens - 1, ""), tokens=[END], tokens_per_s=rate)
    return Reply(tokens=markdown_tokens(tokens, " " + END), tokens_per_s=rate)


def cpu_per_thousand(
    screen: Screen, fake: FakeOpenAI, *, tokens: int, rate: float, reasoning: bool = False
) -> dict[str, float]:
    """The app's CPU time per 1,000 streamed tokens at the start (tokens 1,000-2,000) and at the end
    (the last 1,000 but one) of a ``tokens``-token reply paced at ``rate``; the server's clock says
    when each token left."""
    fake.script(reply(tokens, rate, reasoning))
    since = screen.mark()
    screen.type(b"g")
    screen.read(0.05)
    screen.type(b"\r")
    marks: list[tuple[float, float]] = []
    deadline = time.perf_counter() + tokens / rate * 4 + 60
    while not screen.shows(END.encode(), since):
        marks.append((time.perf_counter(), screen.cpu_s()))
        screen.read(0.05)
        if time.perf_counter() > deadline:
            raise TimeoutError("the reply did not end")
    marks.append((time.perf_counter(), screen.cpu_s()))
    start = fake.stream_started_at or marks[0][0]
    run = EchoRun(cpu_marks=marks)
    first = run.cpu_between(start + 1000 / rate, start + 2000 / rate)
    last = run.cpu_between(start + (tokens - 2000) / rate, start + (tokens - 1000) / rate)
    return {"start_s": first, "end_s": last, "reply_s": marks[-1][0] - start}


def open_app(vault: Path, tmux: bool, pythonpath: str = "") -> Screen:
    env = {"TUI_AGENT_VAULT": str(vault), **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    if tmux:
        return TmuxScreen([*APP], {**env, "TERM": "xterm-256color"})
    return Screen(PtyApp.agent(vault, env))


def close(screen: Screen) -> None:
    if isinstance(screen, TmuxScreen):
        screen.close()
    else:
        screen.app.close()


def measure_echo(
    fake: FakeOpenAI,
    *,
    tokens: int,
    rate: float,
    every: float,
    tmux: bool,
    pythonpath: str = "",
    reasoning: bool = False,
    after_end: int = 0,
) -> EchoRun:
    vault = make_vault(fake.base_url)
    screen = open_app(vault, tmux, pythonpath)
    try:
        wait_shown(screen, READY, 0, 60)
        time.sleep(1.5)
        screen.read(0.01)
        return type_during_reply(
            screen, fake, tokens=tokens, rate=rate, every=every, reasoning=reasoning, after_end=after_end
        )
    finally:
        close(screen)
        shutil.rmtree(vault.parent, ignore_errors=True)


def measure_cpu(
    fake: FakeOpenAI, *, tokens: int, rate: float, pythonpath: str = "", reasoning: bool = False
) -> dict[str, float]:
    vault = make_vault(fake.base_url)
    screen = open_app(vault, False, pythonpath)
    try:
        wait_shown(screen, READY, 0, 60)
        time.sleep(1.5)
        screen.read(0.01)
        return cpu_per_thousand(screen, fake, tokens=tokens, rate=rate, reasoning=reasoning)
    finally:
        close(screen)
        shutil.rmtree(vault.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8000)
    parser.add_argument("--rate", type=float, default=400.0)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--tmux", action="store_true", help="in tmux: send-keys and capture-pane")
    parser.add_argument("--cpu-tokens", type=int, default=0, help="also the CPU per 1,000 tokens of a reply this long")
    parser.add_argument("--cpu-rate", type=float, default=1000.0)
    parser.add_argument(
        "--reasoning", action="store_true", help="the same text streamed as reasoning (a Thinking block), then one word"
    )
    parser.add_argument(
        "--after-end", type=int, default=0, help="type this many keys more after the last word (echoes apart)"
    )
    parser.add_argument(
        "--before", default="", help="also measure this checkout of tui-agent (PYTHONPATH), interleaved"
    )
    args = parser.parse_args()
    fake = FakeOpenAI().start()
    sides = [("after", "")] + ([("before", args.before)] if args.before else [])
    try:
        for _ in range(args.runs):
            for label, path in sides:
                if args.tokens:
                    run = measure_echo(
                        fake,
                        tokens=args.tokens,
                        rate=args.rate,
                        every=args.every,
                        tmux=args.tmux,
                        pythonpath=path,
                        reasoning=args.reasoning,
                        after_end=args.after_end,
                    )
                    print(label, "echo", {k: round(v, 1) for k, v in run.summary().items()}, flush=True)
                if args.cpu_tokens:
                    cpu = measure_cpu(
                        fake, tokens=args.cpu_tokens, rate=args.cpu_rate, pythonpath=path, reasoning=args.reasoning
                    )
                    print(label, "cpu", {k: round(v, 3) for k, v in cpu.items()}, flush=True)
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
