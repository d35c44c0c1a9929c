"""The page's script that the wheel ships is the build of web/'s sources and pinned packages.

tui_agent/commands/serve/static/tui-agent.js, xterm.css and the symbol font are built by `cd web && npm ci && npm
run build` (esbuild, the versions in package-lock.json). This test rebuilds them into a temporary
folder and compares byte for byte, so a change to web/src or to the lock file without a rebuild (or
a hand-edited bundle) fails.

It prepares what it needs itself, as the PostgreSQL tests start their own cluster: `npm ci` from
web/'s lock file into a cache keyed by the lock file's hash (``~/.cache/tui-agent-tests/npm-<sha>/``,
reused by the next run and by every checkout with the same lock), never into web/ (the tree stays
as it was). Without node and npm it skips saying how to install them; under ``CI=true`` it fails
(tests/conftest.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from repo_paths import ROOT

WEB = ROOT / "web"
STATIC = ROOT / "tui_agent" / "commands" / "serve" / "static"
HOW = "needs node and npm: apt-get install nodejs npm"
# Read at import: each test's clean_env points XDG_CACHE_HOME at a folder of its own.
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tui-agent-tests"


def installed_packages(npm: str) -> Path:
    """web/'s packages as its lock file pins them, installed once per lock file (a cache hit costs
    nothing); a half-finished install never becomes the cache (it is renamed into place whole)."""
    lock = (WEB / "package-lock.json").read_bytes()
    folder = CACHE / f"npm-{hashlib.sha256(lock).hexdigest()[:16]}"
    if (folder / "node_modules" / ".bin" / "esbuild").exists():
        return folder / "node_modules"
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="npm-", dir=CACHE))
    try:
        shutil.copy(WEB / "package.json", work / "package.json")
        (work / "package-lock.json").write_bytes(lock)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci (web/package-lock.json) failed:\n{done.stderr[-2000:]}")
        try:
            work.rename(folder)
        except OSError:  # another run put the same install there first: use that one
            if not (folder / "node_modules" / ".bin" / "esbuild").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder / "node_modules"


def test_the_shipped_page_script_is_the_build_of_its_sources(tmp_path):
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(HOW)
    packages = installed_packages(npm)
    # The build runs on a copy of web/'s sources beside the cached packages, so nothing is written
    # into web/ (no node_modules left in the checkout).
    source = tmp_path / "web"
    shutil.copytree(WEB, source, ignore=shutil.ignore_patterns("node_modules"))
    (source / "node_modules").symlink_to(packages, target_is_directory=True)
    out = tmp_path / "out"
    done = subprocess.run([node, "build.mjs", str(out)], cwd=source, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("tui-agent.js", "xterm.css", "noto-sans-symbols-2.woff2", "noto-sans-symbols-2.LICENSE.txt"):
        assert (out / name).read_bytes() == (STATIC / name).read_bytes(), f"{name}: run `cd web && npm run build`"


def test_the_packages_are_pinned_and_the_page_loads_nothing_from_elsewhere():
    package = json.loads((WEB / "package.json").read_text())
    lock = json.loads((WEB / "package-lock.json").read_text())
    for name, version in {**package["dependencies"], **package["devDependencies"]}.items():
        assert version[0].isdigit(), f"{name} {version}: pin an exact version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    page = (ROOT / "tui_agent" / "commands" / "serve" / "templates" / "app_index.html").read_text()
    assert "http://" not in page and "https://" not in page and "//" not in page.replace("<!--", "")
    script = (STATIC / "tui-agent.js").read_text()
    assert "fonts.googleapis" not in script and "cdn." not in script
