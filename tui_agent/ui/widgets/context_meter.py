"""The context meter: tokens of the last request against the profile's context budget, from the
server's usage when it gives one, estimated otherwise; yellow from 75 %, red from 90 %."""

from __future__ import annotations

from textual.widgets import Static

WARN = 0.75
FULL = 0.90


class ContextMeter(Static):
    DEFAULT_CSS = """
    ContextMeter { width: auto; height: 1; padding: 0 1; color: $text-muted; background: $panel; display: none; }
    ContextMeter.-shown { display: block; }
    ContextMeter.-warn { color: $warning; }
    ContextMeter.-full { color: $error; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.tokens: int | None = None
        self.budget: int | None = None
        self.estimated = True
        self._text = ""

    def show(self, tokens: int, budget: int, *, estimated: bool) -> None:
        self.tokens, self.budget, self.estimated = tokens, budget, estimated
        self.add_class("-shown")
        share = tokens / budget if budget else 0.0
        self.set_class(WARN <= share < FULL, "-warn")
        self.set_class(share >= FULL, "-full")
        approx = "~" if estimated else ""
        text = f"ctx {approx}{_short(tokens)} / {_short(budget)} ({share:.0%})"
        # As wide as its text: the screen is laid out again only when that width changes.
        self.update(text, layout=len(text) != len(self._text))
        self._text = text
        self.tooltip = (
            f"The last request held {'about ' if estimated else ''}{tokens:,} tokens "
            f"({'estimated' if estimated else 'as the server counted them'}) of the profile's "
            f"context_budget_tokens = {budget:,}."
        )

    def clear(self) -> None:
        self.tokens = self.budget = None
        self.remove_class("-warn", "-full", "-shown")
        self.update("")
        self._text = ""


def _short(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)
