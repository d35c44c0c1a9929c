"""A benchmark that compares two checkouts runs the one it was given: the app's command keeps the
working directory off ``sys.path``. With ``python -m tui_agent`` run from this checkout's root, the
working directory came first and shadowed the other checkout on PYTHONPATH: both sides of an
interleaved comparison (``bench/stream_echo.py --before``) ran this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from pty_app import APP


def test_the_benchmarked_app_is_the_checkout_on_pythonpath_even_run_from_this_one(tmp_path: Path):
    other = tmp_path / "other"
    (other / "tui_agent").mkdir(parents=True)
    (other / "tui_agent" / "__init__.py").write_text("")
    (other / "tui_agent" / "__main__.py").write_text("import tui_agent; print(tui_agent.__file__)\n")
    env = {**os.environ, "PYTHONPATH": str(other)}
    shown = subprocess.run([*APP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True)
    assert shown.stdout.strip() == str(other / "tui_agent" / "__init__.py")
    # Without -P the working directory wins (as with -m): what the benchmark did before.
    shadowed = subprocess.run(
        [sys.executable, "-c", "import tui_agent; print(tui_agent.__file__)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shadowed.stdout.strip() == str(ROOT / "tui_agent" / "__init__.py")
