"""Run a command on a small, private tmpfs (a real full disk) inside a user + mount namespace.

``python tests/small_disk.py SIZE -- ARGV...`` mounts a fresh tmpfs of SIZE on a temporary folder,
passes its path to ARGV as $SMALL_DISK and runs ARGV there; the mount vanishes with the namespace.
Needs util-linux `unshare` and unprivileged user namespaces (or root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile


def available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


def run(size: str, argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    mountpoint = tempfile.mkdtemp(prefix="small-disk-")
    try:
        script = (
            f"mount -t tmpfs -o size={shlex.quote(size)} tmpfs {shlex.quote(mountpoint)} && "
            f"SMALL_DISK={shlex.quote(mountpoint)} exec {shlex.join(argv)}"
        )
        return subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(os.environ),
        )
    finally:
        os.rmdir(mountpoint)


if __name__ == "__main__":
    result = run(sys.argv[1], sys.argv[3:])
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    raise SystemExit(result.returncode)
