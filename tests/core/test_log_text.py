"""The log file never holds a live escape sequence: text from a model, a tool or a server is
written with its control characters visible."""

from __future__ import annotations

import logging

from tui_agent.core.vault import Vault, setup_logging


def test_control_characters_in_a_log_message_are_written_visible(tmp_path):
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    logger = logging.getLogger("tui_agent.test")
    hostile = "reply \x1b]0;pwned\x07 \x1b[2J \x9b31m \u202eexe.txt"
    logger.warning("tool said: %s", hostile)
    try:
        raise ValueError("\x1b]52;c;aGk=\x07")
    except ValueError:
        logger.exception("failed")
    for handler in logging.getLogger("tui_agent").handlers:
        handler.flush()
    text = vault.log_file.read_text(encoding="utf-8")
    assert "tool said: reply ␛]0;pwned␇ ␛[2J <9B>31m <U+202E>exe.txt" in text
    assert "ValueError: ␛]52;c;aGk=␇" in text  # the traceback too
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
    assert "\n" in text.strip()  # lines stay lines


def test_a_second_vault_in_the_same_process_gets_the_log_and_the_first_log_is_closed(tmp_path):
    first, second = Vault(tmp_path / "one").init(), Vault(tmp_path / "two").init()
    logger = logging.getLogger("tui_agent.test")
    setup_logging(first)
    logger.warning("for the first vault")
    (old,) = [
        h for h in logging.getLogger("tui_agent").handlers if getattr(h, "baseFilename", "") == str(first.log_file)
    ]
    setup_logging(second)
    setup_logging(second)  # again: nothing more
    logger.warning("for the second vault")
    handlers = [h for h in logging.getLogger("tui_agent").handlers if hasattr(h, "baseFilename")]
    for handler in handlers:
        handler.flush()
    assert [h.baseFilename for h in handlers] == [str(second.log_file)]
    assert old.stream is None  # closed: its file is not held open
    assert "for the second vault" not in first.log_file.read_text(encoding="utf-8")
    assert "for the first vault" not in second.log_file.read_text(encoding="utf-8")
    assert "for the second vault" in second.log_file.read_text(encoding="utf-8")
