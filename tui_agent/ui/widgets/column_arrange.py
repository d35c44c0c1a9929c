"""Arranging a column of widgets whose heights come from their content, once per change, not per frame.

Textual caches a child's box model keyed on the size of the container it was measured in, and a
container's arrangement keyed on the size it is arranged in. A reply grows at every write, so the
size its blocks were measured and placed in changed at every write: every block of the growing
part (with the rows of its lists and the cells of its tables) was measured again, and a token cost
more the more blocks there were. In a vertical column whose children have heights in cells or
``auto`` (no ``fr``, no ``%``, no dock, top-aligned), the container's height takes no part in where
or how tall its children are, so the arrangement is made at height 0, whatever the height it is
asked for: the same placements, and each unchanged child keeps its cached box model and
arrangement. Any other column is arranged as Textual does.

Whether a column is such a column is decided once per change to it: reading the rules of each of
its children (~15 us each) at every layout cost a finished reply of a few hundred blocks
milliseconds per frame. The answer is kept until the column, its children or their rules change
(``_styles_key``)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual.css.scalar import Unit
from textual.geometry import Size
from textual.layouts.vertical import VerticalLayout
from textual.widget import Widget

_CONTENT_UNITS = (Unit.CELLS, Unit.AUTO)
_answers: WeakKeyDictionary[Widget, tuple[tuple[int, int, int], bool]] = WeakKeyDictionary()


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


def _styles_key(widget: Widget) -> tuple[int, int, int]:
    """A key that changes whenever the answer of ``height_free`` can.

    A child whose layout rules change (its height, its display, by CSS or inline) asks for a layout,
    and Textual then counts one more ``_layout_updates`` on its parent, as it clears the parent's
    arrangement; ``_nodes._updates`` counts changes to the children; ``styles._cache_key`` grows at
    any change to the column's own rules (tests/project/test_other_packages_internals.py proves the
    three)."""
    return (widget._layout_updates, widget._nodes._updates, widget.styles._cache_key)


def arrange_size(widget: Widget, size: Size) -> Size:
    """The size to arrange ``widget``'s children in: height 0 when its height takes no part in their
    places (what Textual would place them at anyway), else ``size``."""
    if not size.height:
        return size
    key = _styles_key(widget)
    known = _answers.get(widget)
    if known is None or known[0] != key:
        known = _answers[widget] = (key, height_free(widget))
    return Size(size.width, 0) if known[1] else size
