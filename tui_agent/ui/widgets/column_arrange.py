"""Arranging a column of widgets whose heights come from their content, once per change, not per frame.

Textual caches a child's box model keyed on the size of the container it was measured in, and a
container's arrangement keyed on the size it is arranged in. A reply grows at every write, so the
size its blocks were measured and placed in changed at every write: every block of the growing
part (with the rows of its lists and the cells of its tables) was measured again, and a token cost
more the more blocks there were. In a vertical column whose children have heights in cells or
``auto`` (no ``fr``, no ``%``, no dock, top-aligned), the container's height takes no part in where
or how tall its children are, so the arrangement is made at height 0, whatever the height it is
asked for: the same placements, and each unchanged child keeps its cached box model and
arrangement. Any other column is arranged as Textual does."""

from __future__ import annotations

from textual.css.scalar import Unit
from textual.geometry import Size
from textual.layouts.vertical import VerticalLayout
from textual.widget import Widget

_CONTENT_UNITS = (Unit.CELLS, Unit.AUTO)


def height_free(widget: Widget) -> bool:
    """Do the placements of ``widget``'s children ignore its height?"""
    styles = widget.styles
    if not isinstance(widget.layout, VerticalLayout) or styles.align_vertical != "top":
        return False
    for child in widget.displayed_children:
        child_styles = child.styles
        if child_styles.is_docked or child_styles.is_split:
            return False
        height = child_styles.height  # None: as tall as the container
        if height is None or height.unit not in _CONTENT_UNITS:
            return False
        for limit in (child_styles.min_height, child_styles.max_height):
            if limit is not None and limit.unit != Unit.CELLS:
                return False
    return True


def arrange_size(widget: Widget, size: Size) -> Size:
    """The size to arrange ``widget``'s children in: height 0 when its height takes no part in their
    places (what Textual would place them at anyway), else ``size``."""
    return Size(size.width, 0) if size.height and height_free(widget) else size
