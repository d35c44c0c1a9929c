"""The app's CPU time per 1,000 streamed tokens at the start and at the end of a long Markdown reply,
in process: `python bench/stream_cost.py [--tokens 20000] [--before CHECKOUT]`.

A reply bubble in a headless Textual app (120x40, the app's stylesheet) is written the reply of
``tests/fake_openai.markdown_tokens`` a frame's worth at a time (``--per-write`` tokens, then a
frame's pause: 400 tokens a second), as the turn writes it. Measured is the process's CPU time
(all threads) for tokens 1,000-2,000 and for the last 1,000 but one: parsing, mounting, layout and
drawing of each write. CPU time, not wall clock: it moves less with the host's load (the
machine is shared). ``--before`` runs the same in a checkout of another commit (its directory on
PYTHONPATH), interleaved with this one."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def measure(tokens: int, per_write: int, frame_s: float) -> dict[str, float]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fake_openai import markdown_tokens
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll

    import tui_agent.ui.warmup as warmup
    from tui_agent.ui.paths import styles_dir
    from tui_agent.ui.widgets.bubbles import AssistantBubble

    warmup._done.set()  # Markdown from the first word (as once the app has warmed up)

    class Host(App[None]):
        CSS_PATH = [styles_dir() / "app.tcss"]

        def compose(self) -> ComposeResult:
            yield VerticalScroll(id="chat-log")

    pieces = markdown_tokens(tokens)
    marks: dict[int, float] = {}
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        bubble = AssistantBubble(thinking=True)
        await app.query_one("#chat-log").mount(bubble)
        await pilot.pause()
        for i in range(0, len(pieces), per_write):
            marks[i] = time.process_time()
            await bubble.write("".join(pieces[i : i + per_write]))
            app.query_one("#chat-log").scroll_end(animate=False)
            # Not pilot.pause(): it posts a callback to every widget and waits for each, a cost of
            # the harness that grows with the reply's widgets (a real app waits for the network).
            await asyncio.sleep(frame_s)
        await bubble.finish("complete")
        marks[len(pieces)] = time.process_time()

    def cpu(a: int, b: int) -> float:
        keys = sorted(marks)
        start = min(keys, key=lambda k: abs(k - a))
        end = min(keys, key=lambda k: abs(k - b))
        return (marks[end] - marks[start]) * 1000 / (end - start)

    return {"start_s": cpu(1000, 2000), "end_s": cpu(tokens - 2000, tokens - 1000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--per-write", type=int, default=14)
    parser.add_argument("--frame-s", type=float, default=1 / 30)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--before", default="", help="a checkout of another commit, measured interleaved")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.tokens, args.per_write, args.frame_s))))
        return
    sides = [("after", "")] + ([("before", args.before)] if args.before else [])
    for _ in range(args.runs):
        for label, path in sides:
            env = {**os.environ, **({"PYTHONPATH": path} if path else {})}
            argv = [sys.executable, __file__, "--child", "--tokens", str(args.tokens)]
            argv += ["--per-write", str(args.per_write), "--frame-s", str(args.frame_s)]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            print(label, {k: round(v, 3) for k, v in result.items()}, flush=True)


if __name__ == "__main__":
    main()
