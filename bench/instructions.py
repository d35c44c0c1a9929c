"""Instructions to the first paint, counted by valgrind's callgrind: repeatable on a machine whose
speed varies from minute to minute (the wall-clock figures here spread by ±30 %).

Each app runs in the 120x40 pty, paints its first frame and exits (exit_at_paint.py). Counts are
for the whole process up to that frame; the ratio to the bare app is the figure to compare."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from pty_app import PtyApp

HERE = Path(__file__).resolve().parent


def available() -> bool:
    return shutil.which("valgrind") is not None


def count(which: str, vault: Path | None = None) -> float:
    """Billions of instructions from the start of the process to the end of the first frame."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = [
            shutil.which("valgrind") or "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(HERE / "exit_at_paint.py"),
            which,
        ]
        app = PtyApp(argv, {"TUI_AGENT_VAULT": str(vault)} if vault else {})
        try:
            app.drain(300)  # until the app exits
        finally:
            app.close()
        text = out.read_text()
    found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if found is None:
        raise RuntimeError("callgrind wrote no totals")
    return int(found.group(1)) / 1e9


def measure(vaults: dict[str, Path]) -> dict[str, float]:
    """``{"bare": G, name: G for each vault}``."""
    counts = {"bare": count("bare")}
    for name, vault in vaults.items():
        print(f"instructions: {name}", flush=True)
        counts[name] = count("agent", vault)
    return counts
