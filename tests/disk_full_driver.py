"""Run inside a small tmpfs (see small_disk.py): fill the disk, run `tui-agent ask`, report as JSON.

argv: BASE_URL FREE_KB QUESTION: FREE_KB is what is left free before the ask, or -1 to fill the
disk completely once the reply has begun to stream. The vault is $SMALL_DISK/vault; a
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


def fill(leave_kb: int) -> None:
    stats = os.statvfs(root)
    with open(root / "filler", "wb") as filler:
        try:
            filler.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave_kb * 1024))
        except OSError:
            pass


first = ask("--new", "warm up")
assert first.returncode == 0, first.stderr
if free_kb < 0:
    # Mid-stream: fill the disk to the last byte once the reply is being written.
    argv = [sys.executable, "-m", "tui_agent", "ask", "--vault", str(vault), question]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(1000)
    fill(0)
    tail, err = proc.communicate(timeout=120)
    code, stderr, stdout = proc.returncode, err.decode(), len(head) + len(tail)
else:
    fill(free_kb)
    full = ask(question)
    code, stderr, stdout = full.returncode, full.stderr, len(full.stdout)
os.unlink(root / "filler")
report = {
    "code": code,
    "stderr": stderr,
    "stdout": stdout,
    "rows": rows(),
    "files": sorted(os.listdir(vault)),
}
after = ask("and now?")
report["after"] = {"code": after.returncode, "stdout": after.stdout, "stderr": after.stderr}
report["rows_after"] = rows()
report["files_after"] = sorted(os.listdir(vault))
print(json.dumps(report))
