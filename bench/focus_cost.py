"""CPU time of moving the focus between the chat log and the composer with one long Markdown reply on
screen: `python bench/focus_cost.py [--tokens 8000]`.

A headless app (120x40, the app's stylesheet) holds the real ``ChatLog`` with one finished reply of
``tests/fake_openai.markdown_tokens`` and an input; the focus goes to the log, the composer, the
log and the composer again. Measured is the process's CPU time in the second after each move, less
that of an idle second before it (the app's own timers)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def measure(tokens: int) -> list[tuple[str, float]]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fake_openai import markdown_tokens
    from textual.app import App, ComposeResult
    from textual.widgets import Input

    import tui_agent.ui.warmup as warmup
    from tui_agent.core.vault import Vault
    from tui_agent.ui.paths import styles_dir
    from tui_agent.ui.widgets.bubbles import AssistantBubble
    from tui_agent.ui.widgets.chat_log import ChatLog

    warmup._done.set()  # Markdown from the first word (as once the app has warmed up)
    vault = Vault(Path(tempfile.mkdtemp(prefix="focus-cost-")) / "vault").init()

    class Host(App[None]):
        CSS_PATH = [styles_dir() / "app.tcss"]

        def compose(self) -> ComposeResult:
            yield ChatLog(vault, id="chat-log")
            yield Input(id="composer")

    moves: list[tuple[str, float]] = []
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        bubble = AssistantBubble("".join(markdown_tokens(tokens)[:-1]))
        await app.query_one("#chat-log").mount(bubble)
        await pilot.pause()
        await asyncio.sleep(1.0)
        log = app.query_one(ChatLog)
        steps = [(f"focus to {target}", app.query_one(target).focus) for target in ("#chat-log", "#composer")] * 2
        # The message cursor landing on the reply and leaving it (its tint, down to the reply's text).
        steps += [("cursor on the reply", lambda: log.move_cursor_to(bubble, scroll=False))]
        steps += [("cursor off the reply", lambda: log.move_cursor_to(None))]
        for name, step in steps:
            before = time.process_time()
            await asyncio.sleep(1.0)
            idle = time.process_time() - before
            before = time.process_time()
            step()
            await asyncio.sleep(1.0)
            moves.append((name, time.process_time() - before - idle))
        print(f"widgets in the reply: {len(list(bubble.walk_children()))}")
    return moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=8000)
    options = parser.parse_args()
    for target, cpu in asyncio.run(measure(options.tokens)):
        print(f"{target}: {cpu * 1000:.0f} ms of CPU")


if __name__ == "__main__":
    main()
