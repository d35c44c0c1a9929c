"""The model's reasoning in ``tui-agent ask``: on stderr, dimmed on a terminal, or hidden."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from tui_agent.core import events as ev
from tui_agent.core.textsafe import visible

DIM = "\x1b[2m"
RESET = "\x1b[0m"


class ReasoningPrinter:
    """Writes reasoning pieces to ``stream`` (stderr) apart from the answer on stdout."""

    def __init__(self, stream: TextIO, show: bool, safe: Callable[[str], str] = visible) -> None:
        self.stream = stream
        self.safe = safe  # the model's text: control characters made visible (``--raw``: as they are)
        self.show = show
        self.dim = show and stream.isatty()
        self.open = False
        self.ends_line = False

    def write(self, event: ev.ReasoningDelta | ev.TextToReasoning) -> None:
        if not self.show:
            return
        if isinstance(event, ev.TextToReasoning):
            # The answer text already on stdout was reasoning after all (a reply that only closed
            # </think>): say so; the stored answer and every later request leave it out.
            self.end()
            self.stream.write("(the text above was the model's reasoning)\n")
            self.stream.flush()
            return
        if not event.text:
            return
        text = self.safe(event.text)
        if not self.open:
            text = text.lstrip()
            if not text:
                return  # blank reasoning (an empty <think></think>) shows nothing
            self.stream.write(f"{DIM}thinking: " if self.dim else "thinking: ")
            self.open = True
        elif self.dim:
            self.stream.write(DIM)
        self.stream.write(text)
        self.ends_line = text.endswith("\n")
        if self.dim:
            self.stream.write(RESET)
        self.stream.flush()

    def end(self) -> None:
        """The reasoning is over (the answer or anything else follows): finish its line."""
        if self.open:
            if not self.ends_line:
                self.stream.write("\n")
            self.stream.flush()
            self.open = False
