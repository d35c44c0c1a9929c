"""In real Chromium: `tui-agent serve` draws pictures inline in the chat at their real pixels (Sixel
through the page's xterm.js image addon), in the carousel, and keeps them right after Left/Right, a
resize of the window and reopening the conversation; nothing is left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from repo_paths import ROOT
from serve_helpers import needs_browser, open_app, screen_text, start_serve, wait_cell

ARTIFACTS = ROOT / "test-artifacts"
RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 160, 0)
STRIPES = (320, 160)


def stripes(path: Path) -> None:
    """Vertical stripes two pixels wide, red and blue: any resampling or half-cell drawing turns them purple."""
    from PIL import Image

    image = Image.new("RGB", STRIPES, RED)
    for x in range(2, STRIPES[0], 4):
        for dx in (0, 1):
            for y in range(STRIPES[1]):
                image.putpixel((x + dx, y), BLUE)
    image.save(path)


def near(pixel: tuple[int, ...], colour: tuple[int, int, int], tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=False))


def mask(image, low: tuple[int, int, int], high: tuple[int, int, int]):
    """An L image, 255 where every channel is within [low, high]."""
    from PIL import ImageChops

    bands = [
        band.point(lambda v, lo=lo, hi=hi: 255 if lo <= v <= hi else 0)
        for band, lo, hi in zip(image.split(), low, high, strict=True)
    ]
    return ImageChops.multiply(ImageChops.multiply(bands[0], bands[1]), bands[2])


def count(m) -> int:
    return m.histogram()[255]


def stripes_on_screen(shot: Path) -> dict[str, int]:
    """The stripes in a screenshot: pure red and blue pixels, purple ones (a blurred or half-cell
    picture), and the rows where red and blue alternate every 2 pixels over 200 pixels or more."""
    from PIL import Image, ImageChops

    image = Image.open(shot).convert("RGB")
    red = mask(image, (243, 0, 0), (255, 12, 12))
    blue = mask(image, (0, 0, 243), (12, 12, 255))
    purple = mask(image, (80, 0, 80), (255, 60, 255))
    found = {"red": count(red), "blue": count(blue), "purple": count(purple), "sharp_rows": 0}
    box = ImageChops.lighter(red, blue).getbbox()
    if box is None:
        return found
    # Purple counts around the stripes only (a blurred edge or band), not in the rest of the interface.
    around = (max(0, box[0] - 4), max(0, box[1] - 4), box[2] + 4, box[3] + 4)
    found["purple"] = count(purple.crop(around))
    for y in range(box[1], box[3]):
        row = list(image.crop((box[0], y, box[2], y + 1)).get_flattened_data())
        run = best = 0
        for a, b, c in zip(row, row[1:], row[2:], strict=False):
            if (near(a, RED) and near(b, RED) and near(c, BLUE)) or (near(a, BLUE) and near(b, BLUE) and near(c, RED)):
                run += 1
                best = max(best, run)
            elif not (near(a, RED) or near(a, BLUE)):
                run = 0
        if best >= 100:  # 100 steps of red-red-blue or blue-blue-red: 200 pixels or more
            found["sharp_rows"] += 1
    return found


def green_on_screen(shot: Path) -> int:
    from PIL import Image

    return count(mask(Image.open(shot).convert("RGB"), (0, 148, 0), (12, 172, 12)))


def assert_sharp(shot: Path) -> None:
    seen = stripes_on_screen(shot)
    # The whole picture (320x160, less at most one partly hidden row of cells) in pure red and blue.
    assert seen["sharp_rows"] >= 140, seen
    assert seen["red"] >= 140 * 150 and seen["blue"] >= 140 * 150, seen
    assert seen["purple"] < 500, seen


@pytest.fixture
def conversation(env):
    """A conversation whose message holds two pictures: the stripes, then a green one."""
    from PIL import Image

    from tui_agent.core.store import history

    stripes(env.vault.media / "stripes.png")
    Image.new("RGB", (200, 120), GREEN).save(env.vault.media / "green.png")
    chat = history.new_conversation("pictures")
    history.add_message(chat.id, "user", "what is in these?", attachments=["media/stripes.png", "media/green.png"])
    history.add_message(chat.id, "assistant", "Stripes, then green.")
    return chat


def wait_for_picture(page, shot: Path, check, timeout_s: float = 60.0) -> None:
    """Screenshots until ``check(shot)`` holds (the picture comes right after the first paint; a
    loaded machine takes seconds per screenshot: ``timeout_s`` only bounds a test that fails)."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.screenshot(path=str(shot))
        try:
            check(shot)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        page.wait_for_timeout(300)


@pytest.mark.slow
@needs_browser()
def test_pictures_are_drawn_at_real_pixels_and_stay_right(env, tmp_path, conversation, chromium):
    ARTIFACTS.mkdir(exist_ok=True)
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = open_app(chromium, served.url, env.vault.root)
        shot = ARTIFACTS / "serve-stripes-inline.png"
        wait_for_picture(page, shot, assert_sharp)
        assert "1 / 2" in screen_text(page)

        # Right: the green picture, and no stripe left behind; Left: the stripes again, no green left.
        page.mouse.click(*wait_cell(page, "1 / 2"))  # focuses the carousel
        page.keyboard.press("ArrowRight")
        shot = ARTIFACTS / "serve-stripes-right.png"

        def green_only(path: Path) -> None:
            assert green_on_screen(path) >= 200 * 110
            assert stripes_on_screen(path)["sharp_rows"] == 0

        wait_for_picture(page, shot, green_only)
        assert "2 / 2" in screen_text(page)
        page.keyboard.press("ArrowLeft")
        shot = ARTIFACTS / "serve-stripes-left.png"

        def stripes_only(path: Path) -> None:
            assert_sharp(path)
            assert green_on_screen(path) < 50

        wait_for_picture(page, shot, stripes_only)

        # A smaller window: laid out again, the picture redrawn where it now is, still sharp.
        page.set_viewport_size({"width": 1000, "height": 700})
        shot = ARTIFACTS / "serve-stripes-resized.png"
        wait_for_picture(page, shot, stripes_only)

        # Another conversation: nothing of the picture stays; reopening this one from the sidebar draws it again.
        page.focus("textarea.xterm-helper-textarea")
        page.keyboard.press("Control+n")
        shot = ARTIFACTS / "serve-stripes-new-chat.png"

        def no_stripes(path: Path) -> None:
            seen = stripes_on_screen(path)
            assert seen["red"] == seen["blue"] == 0, seen

        wait_for_picture(page, shot, no_stripes)
        page.keyboard.press("Control+b")
        page.mouse.click(*wait_cell(page, "pictures"))  # the conversation in the sidebar's list
        shot = ARTIFACTS / "serve-stripes-reopened-sidebar.png"
        wait_for_picture(page, shot, stripes_only)

        # Reopening the conversation in a new tab (its own session) shows it the same.
        page.close()
        again = open_app(chromium, served.url, env.vault.root)
        shot = ARTIFACTS / "serve-stripes-reopened.png"
        wait_for_picture(again, shot, assert_sharp)
        again.close()
    finally:
        served.stop()


def no_remnants(path: Path) -> dict[str, int]:
    """At most the one picture, whole or cut by the edge of the chat, and sharp wherever it shows."""
    seen = stripes_on_screen(path)
    assert seen["red"] <= 25600 and seen["blue"] <= 25600, seen
    assert seen["purple"] < 500, seen
    assert abs(seen["red"] - seen["blue"]) <= 400, seen  # whole rows of stripes, never a stray band
    return seen


@pytest.mark.slow
@needs_browser()
def test_scrolling_and_the_message_cursor_move_the_picture_without_remnants(env, tmp_path, conversation, chromium):
    from tui_agent.core.store import history

    for n in range(8):
        history.add_message(conversation.id, "user", f"question {n}")
        history.add_message(conversation.id, "assistant", f"answer {n}\n\nwith a second paragraph")
    ARTIFACTS.mkdir(exist_ok=True)
    served = start_serve(env.vault.root, tmp_path / "serve.out")
    try:
        page = open_app(chromium, served.url, env.vault.root)
        chat = wait_cell(page, "answer 7")
        shot = ARTIFACTS / "serve-stripes-scroll.png"
        whole = 0
        for _ in range(30):
            page.mouse.move(*chat)
            page.mouse.wheel(0, -60)
            page.wait_for_timeout(400)
            page.screenshot(path=str(shot))
            seen = no_remnants(shot)
            if seen["sharp_rows"] == 160:
                whole += 1
            if "what is in these?" in screen_text(page) and whole >= 2:
                break
        assert whole >= 2, "the picture never came into view whole"
        # Back down: the picture leaves the view, nothing of it stays.
        for _ in range(40):
            page.mouse.wheel(0, 120)
            page.wait_for_timeout(200)
        wait_for_picture(page, shot, no_remnants)
        page.screenshot(path=str(shot))
        if "what is in these?" not in screen_text(page):
            assert stripes_on_screen(shot)["red"] == 0

        # The message cursor walks up to the picture's message and past it: the picture moves with it.
        page.focus("textarea.xterm-helper-textarea")
        shot = ARTIFACTS / "serve-stripes-cursor.png"
        for _ in range(20):
            page.keyboard.press("ArrowUp")
            page.wait_for_timeout(250)

        def whole_on_screen(path: Path) -> None:  # the first message is on screen, its picture whole
            assert no_remnants(path)["sharp_rows"] == 160

        # Waited for, not for a fixed time: a loaded machine handles the twenty keys later.
        wait_for_picture(page, shot, whole_on_screen, timeout_s=60.0)
    finally:
        served.stop()


def test_served_by_our_page_the_app_draws_sixel_at_the_pages_cell_size(monkeypatch):
    from tui_agent.ui import images
    from tui_agent.ui.terminal_probe import probe

    monkeypatch.setenv("TERM_PROGRAM", "textual")  # what textual-serve sets for the app
    monkeypatch.delenv("TUI_AGENT_IMAGES", raising=False)
    monkeypatch.setenv("TUI_AGENT_CELL_PX", "9.6x18.5")
    chosen = probe()
    assert (chosen.protocol, chosen.cell) == ("web-sixel", (9, 18))
    # A picture smaller than the chat gets the cells it covers, never enlarged; a larger one fits.
    monkeypatch.setattr(images, "_probe", chosen)
    assert images.fit((320, 160), 100, 18) == (36, 9)
    cols, rows = images.fit((2000, 1000), 100, 18)
    assert cols <= 100 and rows <= 18 and cols * 9 >= 0.95 * rows * 18 * 2
    # Another server's page (no cell size: no image addon) gets half-cells; a choice of the user wins.
    monkeypatch.delenv("TUI_AGENT_CELL_PX")
    assert probe().protocol == "halfcell"
    monkeypatch.setenv("TUI_AGENT_CELL_PX", "9x18")
    monkeypatch.setenv("TUI_AGENT_IMAGES", "halfcell")
    assert probe().protocol == "halfcell"
