"""Where the shipped stylesheets are: inside the wheel, or at the repository root when editable."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def styles_dir() -> Path:
    shipped = _PACKAGE / "styles"
    return shipped if shipped.is_dir() else _PACKAGE.parent / "styles"
