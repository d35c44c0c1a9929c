"""Keep snapshot SVGs in the top-level snapshots/ folder (see shared NOTES)."""

from __future__ import annotations

from pathlib import Path

import pytest_textual_snapshot
from syrupy.location import PyTestLocation

SNAPSHOTS = Path(__file__).parent.parent / "snapshots"


class TopLevelSVGExtension(pytest_textual_snapshot.SVGImageExtension):
    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOTS / Path(test_location.filepath).stem)


pytest_textual_snapshot.SVGImageExtension = TopLevelSVGExtension  # type: ignore[misc]
