"""Restyling a widget alone when its focus or a class of its own changes, not all that is in it.

When a widget's focus or classes change, Textual restyles the widget and every descendant
(``update_node_styles``): a rule such as ``ChatLog:focus .bubble`` or ``.-cursor .reply`` could
style a descendant by its ancestor's state. The chat log holds the conversation on screen, and one
long reply is about 1,800 Markdown widgets: moving between the log (the message cursor) and the
composer took 1-3 s each way, and so did the message cursor landing on that reply (its ``-cursor``
class).

No rule the app uses styles a descendant by the log's focus or by ``-cursor``: those style the node
itself (``:focus-within`` is Textual's own, separate walk: ``Screen._update_focus_styles``). So
only the node is restyled, unless the stylesheet holds a rule with that pseudo-class or class on a
part before its last (checked at every change: widgets bring their default CSS into the stylesheet
when they are first mounted); then Textual's walk runs as before.

What a descendant draws its text with (the background and colour it gets from its ancestors) is
cached on it (``Widget.visual_style``), and only a change of its own styles clears it. Textual's
walk does not either: it leaves a node whose own rules are unchanged as it was
(``Stylesheet.replace_rules``). So whichever way the widget was restyled, when its own look changed
the caches below it are cleared (``Widget.notify_style_update``, a few dictionary clears each), or
the message cursor's tint (or a search's mark) would sit around a reply's text but not behind it,
and stay behind it once gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.css.model import CombinatorType, Selector, SelectorType
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.css.stylesheet import Stylesheet

    _Base = Widget
else:
    _Base = object


def _ancestor_parts(selectors: Sequence[Selector]) -> Sequence[Selector]:
    """The selectors before the last compound (``A:focus B.c`` -> ``A:focus``)."""
    last = len(selectors) - 1
    while last > 0 and selectors[last].combinator == CombinatorType.SAME:
        last -= 1
    return selectors[:last]


def styles_descendants(stylesheet: Stylesheet, *, pseudo_class: str = "", class_name: str = "") -> bool:
    """True if some rule styles a node by an ancestor's ``pseudo_class`` or ``class_name``."""
    for rule in stylesheet.rules:
        for selector_set in rule.selector_set:
            for selector in _ancestor_parts(selector_set.selectors):
                if pseudo_class and pseudo_class in selector.pseudo_classes:
                    return True
                if class_name and selector.type == SelectorType.CLASS and selector.name == class_name:
                    return True
    return False


def set_own_class(widget: Widget, add: bool, class_name: str) -> None:
    """``widget.set_class(add, class_name)``, restyling the widget alone where no rule needs more."""
    if widget.has_class(class_name) == add:
        return
    if not widget.is_attached:
        widget.set_class(add, class_name)
        return
    before = widget.visual_style
    if styles_descendants(widget.app.stylesheet, class_name=class_name):
        widget.set_class(add, class_name)  # Textual's walk, over every descendant
    else:
        widget.set_class(add, class_name, update=False)
        widget.app.stylesheet.update_nodes([widget], animate=True)
    _descendants_follow(widget, before)


def _descendants_follow(widget: Widget, before: object) -> None:
    """After ``widget`` was restyled: if its look changed from ``before``, the widgets inside it
    work out again what they draw their text with."""
    if widget.visual_style != before:
        # Repainted already: a change of colour, text style or opacity refreshes the children.
        # Widget's own method, not a subclass's: Markdown's code fence highlights its code again in
        # its own (for a new theme), 0.1-0.4 s more over a long reply's fences, and lays them out.
        for node in widget.walk_children(Widget):
            Widget.notify_style_update(node)  # its text's background and colour, worked out again


class OwnFocusStyles(_Base):
    """Mixed in before the widget class: its focus changes restyle the widget alone (see above)."""

    def watch_has_focus(self, has_focus: bool) -> None:
        stylesheet = self.app.stylesheet
        before = self.visual_style
        if styles_descendants(stylesheet, pseudo_class="focus"):
            super().watch_has_focus(has_focus)
        else:
            stylesheet.update_nodes([self], animate=True)
        _descendants_follow(self, before)
