"""A third-party tool package, installed with pip, registers its tool through the ``tui_agent.tools``
entry point group: ``tui-agent tool --list`` shows it, ``tui-agent tool`` runs it, and the loop
sends its schema to the model and runs the call the model makes (docs/tools.md: Plugins)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from fake_openai import Reply

pytestmark = pytest.mark.slow

PLUGIN = '''
"""A tool from another distribution."""
from typing import Any, ClassVar

from tui_agent.core.tools.base import Tool, ToolContext, ToolResult


class ShoutTool(Tool):
    name = "shout"
    description = "Say the text louder."
    role = "shout_tool"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to shout."}},
        "required": ["text"],
    }

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"shouted": arguments["text"].upper() + "!"})
'''

ENTRY_POINTS = """
[tui_agent.tools]
shout = shout_tool:ShoutTool
"""


def _wheel(folder: Path) -> Path:
    """The plugin as a wheel, the file its build would upload (PEP 427: the module, and a dist-info
    with its metadata, its entry points and a RECORD of hashes). Built here, not by a build backend:
    pip building from source fetched one (hatchling) into a fresh environment, half a minute."""
    dist_info = "shout_tool-1.0.dist-info"
    files = {
        "shout_tool.py": textwrap.dedent(PLUGIN),
        f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: shout-tool\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist_info}/entry_points.txt": textwrap.dedent(ENTRY_POINTS).lstrip(),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / "shout_tool-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin's wheel installed with pip into a folder of its own (put on PYTHONPATH)."""
    wheel = _wheel(tmp_path_factory.mktemp("shout-tool-dist"))
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert list(site.glob("shout_tool-1.0.dist-info/entry_points.txt"))
    assert (site / "shout_tool.py").is_file()
    return site


def run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "tui_agent", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_plugin_tool_is_listed_and_runs(plugin_site, env):
    listed = run(plugin_site, "tool", "--list")
    assert listed.returncode == 0, listed.stderr
    names = [schema["function"]["name"] for schema in json.loads(listed.stdout)]
    assert "shout" in names and "web_search" in names
    done = run(plugin_site, "tool", "shout", '{"text": "hi"}', "--vault", str(env.vault.root))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"status": "ok", "data": {"shouted": "HI!"}}
    # Without the package, the tool is not there.
    bare = run(Path(plugin_site.parent / "nowhere"), "tool", "--list")
    assert "shout" not in [schema["function"]["name"] for schema in json.loads(bare.stdout)]


def test_the_loop_offers_the_plugin_tool_and_runs_the_models_call(plugin_site, env):
    env.fake.script(Reply(tool_calls=[("shout", json.dumps({"text": "hey"}))]), Reply(text="It shouted."))
    result = run(plugin_site, "ask", "--new", "shout hey", "--vault", str(env.vault.root))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It shouted.\n"
    offered = [tool["function"]["name"] for tool in env.fake.chat_requests[0]["tools"]]
    assert "shout" in offered
    shout = next(t for t in env.fake.chat_requests[0]["tools"] if t["function"]["name"] == "shout")
    assert shout["function"]["parameters"]["required"] == ["text"]
    conn = sqlite3.connect(env.vault.db_path)
    try:
        row = conn.execute("SELECT content, status FROM messages WHERE role = 'shout_tool'").fetchone()
    finally:
        conn.close()
    assert row == ('{"status": "ok", "data": {"shouted": "HEY!"}}', "complete")
    sent = [m for m in env.fake.chat_requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == {"status": "ok", "data": {"shouted": "HEY!"}}
