"""In real Chromium, as a new user meets the page: it takes the keyboard on load and when the tab comes
back (keys typed before any click reach the app), the footer is drawn before the first key, the page
without its token reads as written, and the glyphs the app draws (``⭘`` in the header, ``␛`` for an
escape character) come from a font the page ships rather than empty boxes."""

from __future__ import annotations

import sqlite3
import time

import pytest
from fake_openai import Reply
from serve_helpers import needs_browser, open_app, screen_text, start_serve

pytestmark = [pytest.mark.slow, needs_browser()]

FOCUSED = "document.activeElement && document.activeElement.classList.contains('xterm-helper-textarea')"


DRAW = """async (glyph) => {
  const family = window.tuiAgent.terminal.options.fontFamily;
  const size = window.tuiAgent.terminal.options.fontSize;
  await document.fonts.load(`${size}px ${family}`, glyph);
  await document.fonts.ready;
  const pixels = (text) => {
    const canvas = document.createElement("canvas");
    canvas.width = size * 3; canvas.height = size * 2;
    const context = canvas.getContext("2d");
    context.font = `${size}px ${family}`;
    context.fillStyle = "#fff";
    context.fillText(text, size / 2, size * 1.4);
    return Array.from(context.getImageData(0, 0, canvas.width, canvas.height).data).join(",");
  };
  return [pixels(glyph), pixels("\\ue3a0"), pixels(" ")];
}"""


def user_messages(db) -> list[str]:
    return [row[0] for row in sqlite3.connect(db).execute("SELECT content FROM messages WHERE role = 'user'")]


def test_keys_typed_before_any_click_reach_the_app_and_the_footer_is_drawn(env, tmp_path, chromium):
    env.fake.script(Reply(text="a reply"))
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = open_app(chromium, served.url, env.vault.root)
        assert page.evaluate(FOCUSED), page.evaluate("document.activeElement.tagName")
        # The footer's keys come once the client is ready, with no key pressed (a blurred app drew none).
        deadline = time.monotonic() + 30
        while "Quit" not in (footer := screen_text(page).rstrip("\n").split("\n")[-1]) and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert "^q Quit" in footer, repr(footer)
        page.keyboard.type("abc")  # no click, no focus() by the test
        page.keyboard.press("Enter")
        deadline = time.monotonic() + 30
        while user_messages(env.vault.db_path) != ["abc"] and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert user_messages(env.vault.db_path) == ["abc"]
        # Away and back. Headless Chromium sends no focus or visibility events when another tab comes to
        # the front (checked: bring_to_front fires none), so the test sends the ones a browser sends
        # when its tab (visibilitychange) or its window (focus) comes back, each after the keyboard left.
        for back in (
            "document.dispatchEvent(new Event('visibilitychange'))",
            "window.dispatchEvent(new Event('focus'))",
        ):
            page.evaluate("document.activeElement.blur()")
            assert not page.evaluate(FOCUSED)
            page.evaluate(back)
            assert page.evaluate(FOCUSED), back
    finally:
        served.stop()


def test_the_page_without_its_token_reads_as_written(env, tmp_path, chromium):
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = chromium.new_page()
        page.goto(served.base + "/")
        page.wait_for_selector("body.-no-token")
        text = " ".join(page.inner_text(".no-token").split())
        assert "open the link tui-agent serve printed" in text, text
        # As drawn: a space's width between the words and the command on either side of it.
        gaps = page.evaluate(
            """() => { const code = document.querySelector(".no-token code"); const box = code.getBoundingClientRect();
            const edge = (node, start, end) => { const r = document.createRange(); r.setStart(node, start);
              r.setEnd(node, end); return r.getBoundingClientRect(); };
            const before = code.previousSibling, after = code.nextSibling;
            const k = before.textContent.trimEnd().length;
            const left = edge(before, k - 1, k), right = edge(after, after.textContent.length - after.textContent.trimStart().length,
              after.textContent.length - after.textContent.trimStart().length + 1);
            const space = parseFloat(getComputedStyle(code.parentElement).fontSize) / 5;
            return [box.left - left.right, right.left - box.right, space]; }"""
        )
        assert gaps[0] >= gaps[2] and gaps[1] >= gaps[2], gaps
    finally:
        served.stop()


def test_the_glyphs_the_app_draws_have_a_font_on_the_page(env, tmp_path, chromium):
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = open_app(chromium, served.url, env.vault.root)
        assert "⭘" in screen_text(page)  # the header's icon
        for glyph in ("⭘", "␛"):
            # Drawn with the terminal's own font stack, the glyph must look like neither nothing nor the
            # box a font draws for a character it lacks (a private-use one here).
            drawn, box, blank = page.evaluate(DRAW, glyph)
            assert drawn != blank, f"{glyph!r} draws nothing"
            assert drawn != box, f"{glyph!r} is drawn as an empty box: no font on the page has it"
    finally:
        served.stop()
