"""Where things are, for a test module in any folder below tests/: the repository and tests/."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # the support modules, bin/, fixtures/, mcp_servers/
ROOT = TESTS.parent  # the repository
