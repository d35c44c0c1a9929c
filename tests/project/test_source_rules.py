"""Rules of the product's source that hold by construction, each with the reason it exists."""

from __future__ import annotations

import re

from repo_paths import ROOT

PACKAGE = ROOT / "tui_agent"


def test_no_asyncio_wait_for_a_cancel_is_never_dropped():
    """On Python 3.11, ``asyncio.wait_for`` returns the result of an awaitable that completes in
    the same turn as a cancellation, and the cancellation is lost: Esc pressed as a tool finished
    let the turn go on (memory_sql's worker was the case seen: forked workers answer fast enough to
    meet a cancel). ``asyncio.timeout`` raises the cancellation, so the product uses it alone."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bwait_for\(", line) and not re.search(r"\.wait_for_\w*\(|def wait_for", line)
    ]
    assert found == []
