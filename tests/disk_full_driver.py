"""Run inside a small tmpfs (see small_disk.py): fill the disk, run `tui-agent ask`, report as JSON.

argv: BASE_URL FREE_KB (bytes left free after filling) QUESTION. The vault is $SMALL_DISK/vault; a
first `ask` creates it. The report (stdout, one JSON object) holds the ask's exit code, stderr,
stdout length, the rows and the vault's files after the filler is removed, then a second ask's result.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

base_url, free_kb, question = sys.argv[1], int(sys.argv[2]), sys.argv[3]
root = Path(os.environ["SMALL_DISK"])
vault = root / "vault"
env = dict(os.environ, OPENAI_BASE_URL=base_url, OPENAI_API_KEY="test-key")


def ask(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tui_agent", "ask", "--vault", str(vault), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def rows() -> list[list[object]]:
    conn = sqlite3.connect(vault / "agent.db")
    try:
        found = conn.execute("SELECT role, status, content FROM messages ORDER BY id").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [list(r) for r in found]
    finally:
        conn.close()


first = ask("--new", "warm up")
assert first.returncode == 0, first.stderr
stats = os.statvfs(root)
with open(root / "filler", "wb") as filler:
    try:
        filler.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - free_kb * 1024))
    except OSError:
        pass
full = ask(question)
os.unlink(root / "filler")
report = {
    "code": full.returncode,
    "stderr": full.stderr,
    "stdout": len(full.stdout),
    "rows": rows(),
    "files": sorted(os.listdir(vault)),
}
after = ask("and now?")
report["after"] = {"code": after.returncode, "stdout": after.stdout, "stderr": after.stderr}
report["rows_after"] = rows()
report["files_after"] = sorted(os.listdir(vault))
print(json.dumps(report))
