"""First paint of `tui-agent serve` in real Chromium, a conversation with 12 pictures, A/B between two trees.

    .venv/bin/python bench/serve_first_paint.py --before /path/to/other/checkout [--runs 5]

Each run starts `tui-agent serve` from one tree (its own `python -m tui_agent`, run with that tree
as the working directory), opens the printed URL in Debian's Chromium (Playwright, a fresh context)
and measures from the navigation to:

- page: the page's own script has loaded (``DOMContentLoaded``);
- first byte: the first frame of the app's output reached the page (``body.-first-byte``);
- chat: the frame that draws the newest message of the conversation (its text in the websocket's
  output), i.e. the first paint of the conversation;
- picture: (the tree with the image addon) the newest picture is in the page's image storage;
- stream: after all that, a message is sent and a 2,000-token reply streams below the pictures (the
  view follows it, so the pictures above move with every line): from Enter to the frame that
  draws the reply's last word, and the megabytes the page received meanwhile.

The two trees run interleaved (A B A B ...) on the same vault; the medians are printed as a
Markdown table for bench/RESULTS.md. Not a test: no thresholds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHROMIUM = "/usr/bin/chromium"
TOKEN = "bench-token-0123456789"
MARKER = "newest message of the bench"
LAST_WORD = "endofthebenchreply"
REPLY = " ".join(f"word{n}" + ("\n\n" if n % 40 == 39 else "") for n in range(1999)) + " " + LAST_WORD
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def make_vault(root: Path, base_url: str) -> Path:
    """A vault with one conversation: 12 messages with a 512x512 picture each, and their replies."""
    from PIL import Image, ImageDraw

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tui_agent.core.vault import Vault\n"
        "from tui_agent.core.store import open_database, history\n"
        "vault = Vault(Path(sys.argv[1])).init()\n"
        "db = open_database(vault.db_path)\n"
        "from tui_agent.core import profiles\n"
        "profiles.create_profile('bench', {'base_url': sys.argv[3], 'api_key_env': '', 'chat_model': 'm',"
        " 'vision_model': 'm', 'image_model': 'flux2', 'request_timeout_s': 30})\n"
        "profiles.use_profile('bench')\n"
        "chat = history.new_conversation('twelve pictures')\n"
        "for n in range(12):\n"
        "    history.add_message(chat.id, 'user', f'picture {n}', attachments=[f'media/p{n}.png'])\n"
        "    history.add_message(chat.id, 'assistant', f'reply {n}' if n < 11 else sys.argv[2])\n"
        "db.close()\n"
    )
    vault = root / "vault"
    (vault / "media").mkdir(parents=True)
    for n in range(12):
        image = Image.new("RGB", (512, 512), (20 * n, 120, 255 - 20 * n))
        draw = ImageDraw.Draw(image)
        for x in range(0, 512, 16):
            draw.line((x, 0, 511 - x, 511), fill=(255, 255 - 20 * n, 0), width=3)
        image.save(vault / "media" / f"p{n}.png")
    subprocess.run([sys.executable, "-c", code, str(vault), MARKER, base_url], check=True, cwd=ROOT)
    return vault


def start(tree: Path, vault: Path, out: Path) -> tuple[subprocess.Popen[bytes], str]:
    argv = [sys.executable, "-m", "tui_agent", "serve", "--vault", str(vault), "--port", "0", "--token", TOKEN]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with out.open("w") as sink:
        process = subprocess.Popen(
            argv, cwd=tree, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = re.search(r"^Open: (http://\S+)$", out.read_text(), re.MULTILINE)
        if match:
            return process, match.group(1)
        time.sleep(0.05)
    raise SystemExit(f"serve from {tree} printed no URL: {out.read_text()}")


def measure(browser, url: str, fake) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url else route.abort())
    times: dict[str, float] = {}
    started = time.monotonic()
    seen = bytearray()
    streamed = {"bytes": 0, "since": 0.0}

    def frame(payload: object) -> None:
        if not isinstance(payload, bytes):
            return
        if "chat" not in times:
            seen.extend(payload)
            if MARKER.encode() in seen:
                times["chat"] = time.monotonic() - started
        elif streamed["since"] and "stream" not in times:
            streamed["bytes"] += len(payload)
            tail = bytes(seen[-64:]) + payload
            seen[:] = tail
            if LAST_WORD.encode() in tail:
                times["stream"] = time.monotonic() - streamed["since"]
                times["stream MB"] = streamed["bytes"] / 1e6

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    page.goto(url, wait_until="domcontentloaded")
    times["page"] = time.monotonic() - started
    page.wait_for_selector("body.-first-byte", timeout=60_000)
    times["first byte"] = time.monotonic() - started
    deadline = time.monotonic() + 60
    while "chat" not in times and time.monotonic() < deadline:
        page.wait_for_timeout(10)
    has_addon = page.evaluate("!!(window.tuiAgent && window.tuiAgent.images)")
    while has_addon and time.monotonic() < deadline:
        if page.evaluate("window.tuiAgent.images._storage._images.size") > 0:
            times["picture"] = time.monotonic() - started
            break
        page.wait_for_timeout(10)
    from fake_openai import Reply

    fake.script(Reply(text=REPLY, chunk_size=12))
    page.wait_for_timeout(1000)
    page.focus("textarea.xterm-helper-textarea")
    page.keyboard.type("go")
    seen.clear()
    streamed["since"] = time.monotonic()
    page.keyboard.press("Enter")
    while "stream" not in times and time.monotonic() < deadline + 60:
        page.wait_for_timeout(20)
    context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (e.g. a worktree of main)")
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_openai import FakeOpenAI

    fake = FakeOpenAI().start()
    with tempfile.TemporaryDirectory() as tmp:
        vault = make_vault(Path(tmp), fake.base_url)
        results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _ in range(args.runs):
                for label, tree in (("before", args.before), ("after", args.after)):
                    # A fresh copy each run: the streamed turn adds to the conversation.
                    run_vault = Path(tmp) / f"run-{label}-{len(results[label])}"
                    shutil.copytree(vault, run_vault)
                    process, url = start(tree.resolve(), run_vault, Path(tmp) / f"{label}.out")
                    try:
                        results[label].append(measure(browser, url, fake))
                    finally:
                        os.killpg(process.pid, signal.SIGKILL)
                        process.wait()
            browser.close()
    keys = ("page", "first byte", "chat", "picture", "stream", "stream MB")
    print(f"| tree ({args.runs} runs, medians, s) | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    medians = {}
    for label, runs in results.items():
        medians[label] = {
            k: statistics.median([r[k] for r in runs if k in r]) for k in keys if any(k in r for r in runs)
        }
        cells = [f"{medians[label][k]:.2f}" if k in medians[label] else "-" for k in keys]
        print(f"| {label} | " + " | ".join(cells) + " |")
    ratio = medians["after"]["chat"] / medians["before"]["chat"]
    print(f"\nfirst paint of the conversation, after / before: {ratio:.2f}x")
    stream = medians["after"]["stream"] / medians["before"]["stream"]
    print(f"a 2,000-token reply below the pictures, after / before: {stream:.2f}x")
    fake.stop()


if __name__ == "__main__":
    main()
