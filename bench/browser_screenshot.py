"""A screenshot of the real app in a real browser, for the manual (docs/images/browser.png).

A fresh vault whose profile points at a loopback scripted model; `tui-agent serve` on it; Debian's
Chromium (headless, driven by Playwright) opens the printed link, types `/imagine PHOTO a fox in the snow` and keeps a
PNG once the pictures are drawn (the same steps as bench/screenshots.py in xterm). Look at the PNG.

    python bench/browser_screenshot.py [--out docs/images/browser.png]

Needs: apt-get install chromium
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(ROOT / "bench"))

CHROMIUM = "/usr/bin/chromium"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "browser.png")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print("needs Chromium: apt-get install chromium", file=sys.stderr)
        return 2
    from fake_openai import FakeOpenAI
    from playwright.sync_api import sync_playwright
    from screenshots import make_vault
    from serve_helpers import CHROMIUM_ARGS, open_app, screen_text, start_serve, type_message

    os.environ["PATH"] = f"{TESTS / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    work = Path(tempfile.mkdtemp(prefix="browser-shot-"))
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    fake = FakeOpenAI().start()
    fake.default_text = "Two foxes in the snow: one looking left, one curled up."  # the vision model's look
    vault = make_vault(work / "vault", fake.base_url)
    served = start_serve(vault, work / "serve.out")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = open_app(browser, served.url, vault)
            type_message(page, "/imagine PHOTO a fox in the snow")
            deadline = time.monotonic() + 120
            while "one curled up" not in screen_text(page) and time.monotonic() < deadline:
                page.wait_for_timeout(500)
            page.wait_for_timeout(3000)  # the picture comes right after the text
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    finally:
        served.stop()
        fake.stop()
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
