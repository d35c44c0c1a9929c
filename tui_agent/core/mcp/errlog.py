"""``logs/mcp-NAME.log``: what a server writes to stderr, with its control characters made visible.

A server's stderr is text we did not write: raw in the log, ``cat`` or ``tail -f`` of it would let
the server set the terminal's title, write its clipboard or draw on it. So the server gets the
write end of a pipe as its stderr, and a thread copies what comes through into the log file,
decoded as UTF-8 (bad bytes replaced) and passed through ``textsafe.visible``.
"""

from __future__ import annotations

import codecs
import os
import threading
from pathlib import Path
from typing import TextIO

from tui_agent.core.textsafe import visible


class VisibleLog:
    """``writer`` is the file to give the child as its stderr; ``close()`` once the child is started
    and done (the copy ends when every write end is closed: ours and the child's)."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "a", encoding="utf-8")
        read_end, write_end = os.pipe()
        self._read_end = read_end
        self.writer: TextIO = os.fdopen(write_end, "w", encoding="utf-8")
        self._thread = threading.Thread(target=self._copy, name=f"mcp-stderr-{path.name}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while chunk := os.read(self._read_end, 65536):
                self._write(decoder.decode(chunk))
            self._write(decoder.decode(b"", final=True))
        except OSError:
            pass
        finally:
            os.close(self._read_end)
            self._file.close()

    def _write(self, text: str) -> None:
        if text:
            self._file.write(visible(text))
            self._file.flush()

    def close(self, wait_s: float = 0.0) -> None:
        """Close our write end; wait up to ``wait_s`` for what the child wrote to reach the file."""
        if not self.writer.closed:
            self.writer.close()
        if wait_s > 0:
            self._thread.join(wait_s)
