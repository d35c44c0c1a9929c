"""Fixtures of the MCP tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def pids(tmp_path, monkeypatch):
    """The file the fixture MCP server writes its process id to (one line per start)."""
    path = tmp_path / "mcp-pids.txt"
    monkeypatch.setenv("FIXTURE_MCP_PIDS", str(path))
    return path
