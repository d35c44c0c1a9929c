"""One measurement each: start a real app in a pty, do one thing, return seconds (and MB)."""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pty_app import READY, PtyApp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI, Reply, png_bytes
from PIL import Image

STILL_RUNNING = b"still running"  # the app's answer to a message sent while a reply runs


def fill(vault: Path, messages: int, *, images_every: int = 0, huge_lines: int = 0) -> None:
    """A conversation of ``messages`` Markdown messages (optionally images, or one huge reply last)."""
    conn = sqlite3.connect(vault / "agent.db")
    conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES ('long', 'x', 'x')")
    rows = [
        (
            "user" if i % 2 == 0 else "assistant",
            f"message {i}: **lorem** ipsum `dolor` sit amet, " + "consectetur adipiscing elit " * 6,
        )
        for i in range(messages)
    ]
    if huge_lines:
        rows.append(("assistant", "".join(f"row {i} of a huge reply\n" for i in range(huge_lines))))
    conn.executemany("INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, ?, ?, 'x')", rows)
    if images_every:
        media = vault / "media"
        media.mkdir(exist_ok=True)
        # On the newest user messages, so they are on the first screen.
        for n, message_id in enumerate(range(messages - 1, 0, -2 * images_every)):
            Image.effect_noise((64, 48), 80).convert("RGB").save(media / f"pic{n}.png")
            conn.execute(
                "INSERT INTO attachments(message_id, position, path, mime) VALUES (?, 0, ?, 'image/png')",
                (message_id, f"media/pic{n}.png"),
            )
    conn.commit()
    conn.close()


def paint(app: PtyApp) -> tuple[float, float]:
    try:
        painted = app.wait_for(READY)
        app.drain(0.3)
        return painted - app.started, app.rss_mb()
    finally:
        app.close()


def echo(app: PtyApp) -> float:
    try:
        app.wait_for(READY)
        app.drain(1.5)
        return app.echo_s()
    finally:
        app.close()


def send_at_once(vault: Path, fake: FakeOpenAI, env: dict[str, str], after_s: float = 0.1) -> float:
    """Enter pressed 100 ms after the first paint -> the reply's first token on screen. With
    ``after_s=3`` (``send_idle``) the same send once the app has idled: what it is compared with."""
    fake.script(Reply(tokens=[f" fz{i}q" for i in range(300)]))
    app = PtyApp.agent(vault, env)
    try:
        app.wait_for(READY)
        if after_s > 1:
            app.drain(after_s)  # the pty read meanwhile: an app blocked on a full pty would not idle
        else:
            time.sleep(after_s)
        start = time.perf_counter()
        app.send(b"hi\r")
        first = app.wait_for(b"fz0q")
        app.wait_for(b"fz299q")
        return first - start
    finally:
        app.close()


def send_idle(vault: Path, fake: FakeOpenAI, env: dict[str, str]) -> float:
    """The first send 3 s after the first paint (the warm-up done, the app idle) -> first token."""
    return send_at_once(vault, fake, env, after_s=3.0)


def stream(vault: Path, fake: FakeOpenAI, tokens: int, env: dict[str, str]) -> tuple[float, float, float]:
    """Enter -> last token on screen; server's last byte -> last token on screen; peak RSS."""
    fake.script(Reply(tokens=[f" t{i}" for i in range(tokens)]))
    app = PtyApp.agent(vault, env)
    try:
        app.wait_for(READY)
        app.drain(1.5)
        app.send(b"go")
        app.drain(0.2)
        fake.stream_ended_at = None
        start = time.perf_counter()
        app.send(b"\r")
        done = app.wait_for(f"t{tokens - 1}".encode(), timeout=600)
        ended = fake.stream_ended_at or done
        app.drain(0.3)
        return done - start, done - ended, app.rss_mb("VmHWM")
    finally:
        app.close()


def session(vault: Path, fake: FakeOpenAI, turns: int, env: dict[str, str]) -> dict[str, Any]:
    """``turns`` turns in one sitting: each a 300-token reply, every tenth with a tool call and an image.

    A turn is timed from the Enter the app accepted to the reply's last word on screen. The next
    message is typed as soon as that word shows, like a quick user: the app accepts it once the
    turn is over. Accepted is visible in the pty: the composer empties, so its placeholder is drawn
    again (it held the typed text until then). Sent too early, the app keeps the text and says a
    reply is still running: Enter is pressed again a moment later."""
    (vault / "media").mkdir(exist_ok=True)
    (vault / "media" / "pic.png").write_bytes(png_bytes((30, 160, 90), (64, 48)))
    app = PtyApp.agent(vault, env)
    durations: list[float] = []
    cpu: list[float] = []  # the app's CPU time per turn
    rss: dict[int, float] = {}  # after turn n, every 50 turns: growth shows here
    refused = 0
    try:
        app.wait_for(READY)
        app.drain(1.5)
        first_echo = app.echo_s()
        for turn in range(turns):
            words = [f" w{turn}x{i}" for i in range(299)] + [f" end{turn}z"]
            if turn % 10 == 9:
                call = json.dumps({"path": "media/pic.png"})
                fake.script(Reply(tool_calls=[("show_image", call)]), Reply(tokens=words))
            else:
                fake.script(Reply(tokens=words))
            typed = f"turn {turn}!".encode()  # "!": no message is a prefix of another
            app.send(typed)
            app.wait_for(typed)  # the composer holds the text: its placeholder is gone
            used = app.cpu_s()
            while True:
                start = time.perf_counter()
                before = len(app.plain)
                app.send(b"\r")
                if app.wait_for_any((READY, STILL_RUNNING), timeout=30) == READY:
                    break
                refused += 1
                app.drain(0.1)
            # Searched from before that Enter, not after the placeholder: a reply that streams in
            # before the next frame is drawn in the same frame as the emptied composer, above it
            # (seen once in a few hundred turns, after an image turn had kept the app busy).
            app.seen = min(app.seen, before)
            try:
                app.wait_for(f"end{turn}z".encode(), timeout=120)
            except TimeoutError as exc:
                raise TimeoutError(f"turn {turn}: {exc}\n--- the app's log:\n{_log_tail(vault)}") from exc
            durations.append(time.perf_counter() - start)
            cpu.append(app.cpu_s() - used)
            if (turn + 1) % 50 == 0:
                rss[turn + 1] = app.rss_mb()
        app.drain(2.0)
        return {
            "turns": turns,
            "first_echo": first_echo,
            "last_echo": app.echo_s(),
            "rss_mb": app.rss_mb(),
            "first_turns_s": statistics.median(durations[:50]),
            "last_turns_s": statistics.median(durations[-50:]),
            "first_cpu_s": statistics.mean(cpu[:50]),  # means: one turn is a few clock ticks
            "last_cpu_s": statistics.mean(cpu[-50:]),
            "cpu_s": cpu,
            "refused": refused,
            "rss_by_turn": rss,
            "turn_s": durations,
        }
    finally:
        app.close()


GC_PROBE = Path(__file__).resolve().parent / "gc_probe"


def gc_pauses(vault: Path, fake: FakeOpenAI, turns: int, env: dict[str, str]) -> dict[str, Any]:
    """``turns`` 300-token replies, each followed by a second of reading: how many full collections
    of the cycle collector fell inside a reply (Enter → last word) and how many between replies."""
    log = vault / "gc.log"
    log.write_text("")
    app = PtyApp.agent(vault, {**env, "PYTHONPATH": str(GC_PROBE), "BENCH_GC_LOG": str(log)})
    windows: list[tuple[float, float]] = []
    try:
        app.wait_for(READY)
        app.drain(1.5)
        for turn in range(turns):
            fake.script(Reply(tokens=[f" g{turn}x{i}" for i in range(299)] + [f" gend{turn}z"]))
            typed = f"pause {turn}!".encode()
            app.send(typed)
            app.wait_for(typed)
            start = time.perf_counter()
            app.send(b"\r")
            app.wait_for(f"gend{turn}z".encode(), timeout=120)
            windows.append((start, time.perf_counter()))
            app.drain(1.0)  # the user reads the reply
    finally:
        app.close()
    during: list[float] = []
    between = 0
    for line in log.read_text().splitlines():
        at, ms = (float(x) for x in line.split())
        if any(a <= at <= b for a, b in windows):
            during.append(ms)
        else:
            between += 1
    return {"turns": turns, "during": len(during), "during_ms": during, "between": between}


PAGE_UP = b"\x1b[5~"
MESSAGE_NUMBER = re.compile(rb"message (\d+):")


def scroll_up(vault: Path, messages: int, *, burst: int = 0, env: dict[str, str] | None = None) -> dict[str, Any]:
    """From the end of a ``messages``-message conversation to its first message with PageUp (in the
    message cursor, entered with Up from the empty composer), each key sent once the frame that
    answered the one before is drawn (a key held down, as fast as the app follows). ``burst``: a
    second's pause after every that many keys (scrolling, then reading). Per key: the time until
    the app starts drawing its answer; and the full collections of the cycle collector meanwhile."""
    log = vault / "gc.log"
    log.write_text("")
    app = PtyApp.agent(vault, {"PYTHONPATH": str(GC_PROBE), "BENCH_GC_LOG": str(log), **(env or {})})
    answers: list[float] = []
    try:
        app.wait_for(READY)
        app.drain(1.5)
        app.send(b"\x1b[A")  # Up: into the messages
        app.drain(0.3)
        rss_start = app.rss_mb()
        start = time.perf_counter()
        lowest = messages
        while lowest > 0:
            if len(answers) > 20 * messages:
                raise TimeoutError(f"PageUp never reached the first message (lowest seen: {lowest})")
            drawn = len(app.buffer)
            sent = time.perf_counter()
            app.send(PAGE_UP)
            while len(app.buffer) == drawn:
                if not app._read(0.002):
                    raise TimeoutError(f"the app exited at PageUp {len(answers) + 1}:\n{_log_tail(vault)}")
                if time.perf_counter() - sent > 10:
                    raise TimeoutError(
                        f"no answer to PageUp {len(answers) + 1} in 10 s (lowest message seen: {lowest})"
                    )
            answers.append(time.perf_counter() - sent)
            while True:  # the rest of that frame: until the output rests
                drawn = len(app.buffer)
                app._read(0.03)
                if len(app.buffer) == drawn:
                    break
            seen = [int(n) for n in MESSAGE_NUMBER.findall(bytes(app.plain[-40_000:]))]
            lowest = min([lowest, *seen])
            if burst and len(answers) % burst == 0:
                app.drain(1.0)
        total = time.perf_counter() - start
        rss_top = app.rss_mb()
    finally:
        app.close()
    collections = [float(line.split()[1]) for line in log.read_text().splitlines()]
    answers.sort()
    return {
        "keys": len(answers),
        "total_s": total,
        "median_s": statistics.median(answers),
        "p95_s": answers[int(len(answers) * 0.95)],
        "max_s": answers[-1],
        "over_100ms": sum(a > 0.1 for a in answers),
        "collections": len(collections),
        "collection_max_ms": max(collections, default=0.0),
        "rss_start": rss_start,
        "rss_top": rss_top,
    }


def _log_tail(vault: Path, chars: int = 6000) -> str:
    log = vault / "logs" / "agent.log"
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


def huge_reply(vault: Path, fake: FakeOpenAI, lines: int, env: dict[str, str]) -> dict[str, float]:
    """A reply of ``lines`` lines: Esc while it streams -> 'cancelled' shown; reopen -> paint; echo."""
    text = "".join(f"row {i} of a huge reply\n" for i in range(lines))
    fake.script(Reply(tokens=[text[i : i + 20_000] for i in range(0, len(text), 20_000)], chunk_delay_s=0.02))
    app = PtyApp.agent(vault, env)
    try:
        app.wait_for(READY)
        app.drain(1.5)
        app.send(b"flood\r")
        app.wait_for(b"long reply (", timeout=120)
        app.drain(0.5)
        start = time.perf_counter()
        app.send(b"\x1b")
        cancelled = app.wait_for(b"cancelled") - start
    finally:
        app.close()
    fill_huge(vault, lines)
    reopen = PtyApp.agent(vault, env)
    try:
        painted = reopen.wait_for(READY) - reopen.started
        reopen.drain(1.5)
        keystroke = reopen.echo_s()
    finally:
        reopen.close()
    return {"esc_s": cancelled, "reopen_paint_s": painted, "echo_after_reopen_s": keystroke}


def fill_huge(vault: Path, lines: int) -> None:
    """Make the newest conversation end with the complete huge reply (as if it had finished)."""
    conn = sqlite3.connect(vault / "agent.db")
    conversation = conn.execute("SELECT max(id) FROM conversations").fetchone()[0]
    conn.execute(
        "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (?, 'assistant', ?, 'x')",
        (conversation, "".join(f"row {i} of a huge reply\n" for i in range(lines))),
    )
    conn.commit()
    conn.close()
