"""In real Chromium: a click in the chat puts the message cursor on a message, and what is typed next
is still a message (the letters are not taken as the cursor's commands), sent with Enter."""

from __future__ import annotations

import sqlite3
import time

import pytest
from fake_openai import Reply
from serve_helpers import needs_browser, open_app, start_serve, type_message, wait_cell


def user_messages(db) -> list[str]:
    return [row[0] for row in sqlite3.connect(db).execute("SELECT content FROM messages WHERE role = 'user'")]


@pytest.mark.slow
@needs_browser()
def test_typing_after_a_click_in_the_chat_is_sent_as_a_message(env, tmp_path, chromium):
    env.fake.script(Reply(text="first reply"), Reply(text="second reply"))
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = open_app(chromium, served.url, env.vault.root)
        type_message(page, "hello")
        page.mouse.click(*wait_cell(page, "first reply"))  # the message cursor is on the reply now
        page.wait_for_timeout(300)
        deadline = time.monotonic() + 30
        page.keyboard.type("copy, print, regenerate, edit")
        page.keyboard.press("Enter")
        while "copy, print, regenerate, edit" not in user_messages(env.vault.db_path) and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert user_messages(env.vault.db_path) == ["hello", "copy, print, regenerate, edit"]
        wait_cell(page, "second reply")
        assert len(env.fake.chat_requests) == 2  # nothing regenerated
    finally:
        served.stop()
