"""The page's script that the wheel ships is the build of web/'s sources and pinned packages.

tui_agent/commands/serve/static/tui-agent.js, xterm.css and the symbol font are built by `cd web && npm ci && npm
run build` (esbuild, the versions in package-lock.json). This test rebuilds them into a temporary
folder and compares byte for byte, so a change to web/src or to the lock file without a rebuild (or
a hand-edited bundle) fails. Without npm or web/node_modules it skips saying how; in CI it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
STATIC = ROOT / "tui_agent" / "commands" / "serve" / "static"
HOW = "needs node and npm (apt-get install nodejs npm) and web/node_modules (cd web && npm ci)"


def test_the_shipped_page_script_is_the_build_of_its_sources(tmp_path):
    node = shutil.which("node")
    if node is None or not (WEB / "node_modules" / ".bin" / "esbuild").exists():
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(HOW)
        pytest.skip(HOW)
    done = subprocess.run([node, "build.mjs", str(tmp_path)], cwd=WEB, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("tui-agent.js", "xterm.css", "noto-sans-symbols-2.woff2", "noto-sans-symbols-2.LICENSE.txt"):
        assert (tmp_path / name).read_bytes() == (STATIC / name).read_bytes(), f"{name}: run `cd web && npm run build`"


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
