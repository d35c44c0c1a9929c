"""Try the app against another Textual release (the newest by default) without touching the venv.

Installs that Textual (with what it needs) into a throwaway folder put first on PYTHONPATH, then
prints which ``ui/textual_fixes`` work-arounds still apply there and runs the UI tests against it:

    .venv/bin/python bench/textual_upgrade.py                   # the newest Textual on the index
    .venv/bin/python bench/textual_upgrade.py --textual 8.1.1   # a given release
    .venv/bin/python bench/textual_upgrade.py --tests tests/ui/test_textual_fixes.py -- -x

A fix reported "not applied" found its bug gone (or Textual reshaped): read its reason, then its
test in tests/ui/test_textual_fixes.py. The exit code is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UI_MARKERS = ("from textual", "import textual", "tui_agent.ui", "run_test(", "snap_compare")

REPORT = """
import json, textual, importlib.metadata as md
from tui_agent.ui import textual_fixes
print(json.dumps({"textual": md.version("textual"), "fixes": textual_fixes.apply()}))
"""


def ui_tests() -> list[str]:
    """The test modules that drive Textual (the app, widgets, snapshots)."""
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if any(marker in text for marker in UI_MARKERS):
            found.append(str(path.relative_to(ROOT)))
    return found


def install(target: Path, version: str | None) -> None:
    spec = f"textual=={version}" if version else "textual"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--upgrade", "--target", str(target), spec]
    subprocess.run(pip, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--textual", metavar="VERSION", help="the release to try (default: the newest)")
    parser.add_argument("--tests", nargs="*", help="test files (default: every UI test module)")
    parser.add_argument("--all", action="store_true", help="slow tests too (default: -m 'not slow')")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="textual-upgrade-") as folder:
        target = Path(folder)
        install(target, args.textual)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
        shown = subprocess.run(
            [sys.executable, "-c", REPORT], env=env, cwd=ROOT, capture_output=True, text=True, check=False
        )
        if shown.returncode != 0:
            print(shown.stderr, file=sys.stderr)
            return shown.returncode
        report = json.loads(shown.stdout.strip().splitlines()[-1])
        print(f"Textual {report['textual']} (in {target})")
        width = max(len(name) for name in report["fixes"])
        for name, outcome in report["fixes"].items():
            print(f"  {name:<{width}}  {outcome}")
        tests = args.tests if args.tests else ui_tests()
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests, *args.pytest_args]
        if not args.all:
            command += ["-m", "not slow"]
        print("$ " + " ".join(command), flush=True)
        done = subprocess.run(command, env=env, cwd=ROOT, check=False, capture_output=True, text=True)
        print(done.stdout[-4000:])
        summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
        print(f"Textual {report['textual']}: {summary[-1] if summary else 'no summary'}")
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
