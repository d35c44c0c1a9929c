"""The carousel in half-cell mode: its image keeps its size through Right, Left, resize and reopen.

Pilot tests measure the image widget; snapshot tests (SVGs in snapshots/test_carousel/) show it.
"""

from __future__ import annotations

import pytest
from fake_openai import png_bytes
from media_helpers import picture_tool_row
from PIL import Image
from pilot_helpers import make, running, until

from tui_agent.core.store import history
from tui_agent.ui.app import AgentApp
from tui_agent.ui.images import fit
from tui_agent.ui.widgets.carousel import ImageCarousel

SIZE = (120, 40)


def image_conversation(env, sizes=((64, 40), (40, 64)), missing: int | None = None) -> int:
    conversation = history.new_conversation("pictures")
    history.add_message(conversation.id, "user", "make pictures")
    paths = []
    for i, size in enumerate(sizes):
        path = env.vault.media / f"shapes/shape-{i + 1}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if i != missing:
            path.write_bytes(png_bytes(((70 * i + 40) % 255, 120, 200 - 60 * i), size))
        paths.append(f"media/shapes/shape-{i + 1}.png")
    picture_tool_row(conversation.id, paths)
    history.add_message(conversation.id, "assistant", "Here you go.")
    return conversation.id


async def settle(pilot, carousel: ImageCarousel, counter: str | None = None) -> None:
    """Until the carousel shows one picture (or why it cannot), laid out, at ``counter`` if given,
    and its layout holds still: never a fixed time (a loaded machine lays it out later)."""

    def shown() -> bool:
        images = carousel.query(".carousel-image, .carousel-missing")
        counted = counter is None or str(carousel.query_one(".counter").render()) == counter
        return counted and len(images) == 1 and images.first().size.height > 0

    await until(pilot, shown, what=f"the carousel never showed one picture {counter or ''}")
    boxes: list[tuple[int, int, int] | None] = []

    def still() -> bool:  # the same layout at two checks a pause apart
        boxes.append(shown_box(carousel) if shown() else None)
        return len(boxes) > 1 and boxes[-1] is not None and boxes[-1] == boxes[-2]

    await until(pilot, still, what="the carousel's layout never held still")


def image_box(carousel: ImageCarousel) -> tuple[int, int, int]:
    """(slot height, image columns, image rows) as laid out on screen."""
    slot = carousel.query_one(".carousel-slot")
    image = carousel.query_one(".carousel-image, .carousel-missing")
    return slot.size.height, image.size.width, image.size.height


def shown_box(carousel: ImageCarousel) -> tuple[int, int, int] | None:
    """``image_box`` while the carousel shows one picture; None while it changes it."""
    return image_box(carousel) if len(carousel.query(".carousel-image, .carousel-missing")) == 1 else None


def test_fit_keeps_the_aspect_ratio_and_the_limits():
    # 10x20 px cells: a square image of 40 columns is 20 rows
    assert fit((1024, 1024), 40, 100, (10, 20)) == (40, 20)
    # too tall for the rows allowed: shrink both ways
    assert fit((500, 1000), 40, 10, (10, 20)) == (10, 10)
    # grows with the space given
    assert fit((1024, 1024), 90, 100, (10, 20)) == (90, 45)


@pytest.mark.slow
async def test_right_left_resize_and_reopen_keep_the_image_size(env):
    conversation_id = image_conversation(env)
    async with running(env, size=SIZE) as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 2")
        slot, cols, rows = image_box(carousel)
        assert rows > 0 and cols > 0 and slot >= rows
        # the landscape image: wider than tall on screen (10x20 cells: 64x40 px -> cols ≈ 3.2 x rows)
        assert cols > rows * 2
        carousel.focus()
        await pilot.press("right")
        await settle(pilot, carousel, "2 / 2")
        slot_after, cols2, rows2 = image_box(carousel)
        assert slot_after == slot, "the slot must not jump between images"
        assert rows2 > 0 and cols2 < cols  # the portrait image is narrower in the same slot
        await pilot.press("left")
        await settle(pilot, carousel, "1 / 2")
        assert image_box(carousel) == (slot, cols, rows)
        # a wider, taller terminal gives a bigger image (aspect ratio kept)
        await pilot.resize_terminal(200, 60)
        await until(
            pilot,
            lambda: (box := shown_box(carousel)) is not None and box[1] > cols and box[2] > rows,
            what="the image never grew with the terminal",
        )
        await settle(pilot, carousel, "1 / 2")
        big_slot, big_cols, big_rows = image_box(carousel)
        assert big_slot >= big_rows
        assert big_cols > cols and big_rows > rows
        await pilot.resize_terminal(*SIZE)
        await until(pilot, lambda: shown_box(carousel) == (slot, cols, rows), what="the image never came back")
        await settle(pilot, carousel, "1 / 2")
        assert image_box(carousel) == (slot, cols, rows)
        # reopen the conversation: same size again
        await app.conversation_view.open_conversation(None)
        await app.conversation_view.open_conversation(conversation_id)
        reopened = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, reopened, "1 / 2")
        assert image_box(reopened) == (slot, cols, rows)


async def test_a_missing_image_says_why_in_full(env):
    image_conversation(env, sizes=((64, 40),), missing=0)
    async with running(env, size=SIZE) as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel)
        missing = carousel.query_one(".carousel-missing")
        text = str(missing.render())
        assert "image unavailable: shape-1.png" in text
        assert missing.size.height >= len(text.splitlines())  # nothing cut off


def _snap_app(env) -> AgentApp:
    image_conversation(env)
    return make(env)


def keys_then_counters(*steps: tuple[str, str]):
    """A snapshot's ``run_before``: the carousel at "1 / 2", focused, then each key and the counter it leads to."""

    async def run_before(pilot):
        carousel = pilot.app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 2")
        carousel.focus()
        for key, counter in steps:
            await pilot.press(key)
            await settle(pilot, carousel, counter)

    return run_before


def test_snapshot_first_image(env, snap_compare):
    """You should see the first (landscape, blue) image in half-cells, '◀ 1 / 2 ▶' below it."""

    async def run_before(pilot):
        await settle(pilot, pilot.app.conversation_view.chat_log.query_one(ImageCarousel), "1 / 2")

    assert snap_compare(_snap_app(env), terminal_size=SIZE, run_before=run_before)


def test_snapshot_after_right(env, snap_compare):
    """You should see the second (portrait) image centred in the same-height slot, '◀ 2 / 2 ▶'."""

    assert snap_compare(_snap_app(env), terminal_size=SIZE, run_before=keys_then_counters(("right", "2 / 2")))


def test_snapshot_after_right_then_left(env, snap_compare):
    """You should see the first image again, exactly as before, '◀ 1 / 2 ▶'."""

    steps = keys_then_counters(("right", "2 / 2"), ("left", "1 / 2"))
    assert snap_compare(_snap_app(env), terminal_size=SIZE, run_before=steps)


@pytest.mark.slow
def test_snapshot_after_reopening(env, snap_compare):
    """You should see the conversation reopened (via a new chat and back) with its image whole."""
    conversation_id = image_conversation(env)

    async def run_before(pilot):
        app = pilot.app
        await settle(pilot, app.conversation_view.chat_log.query_one(ImageCarousel), "1 / 2")
        await app.conversation_view.open_conversation(None)
        await pilot.pause(0.1)
        await app.conversation_view.open_conversation(conversation_id)
        await settle(pilot, app.conversation_view.chat_log.query_one(ImageCarousel), "1 / 2")

    assert snap_compare(make(env), terminal_size=SIZE, run_before=run_before)


def test_png_fixture_sizes_are_what_the_tests_assume(env):
    image_conversation(env)
    with Image.open(env.vault.media / "shapes/shape-2.png") as image:
        assert image.size == (40, 64)


async def test_pictures_on_the_first_page_are_decoded_after_the_first_paint(env, monkeypatch):
    """Mounting a carousel lays its slot out at the picture's size from the file's header (no
    Pillow, no decoding before the first frame); the pictures are decoded after the screen was laid
    out and drawn in the rows kept for them. A broken picture gets its message in its place."""
    from tui_agent.ui.widgets import carousel as carousel_module

    image_conversation(env, sizes=((64, 40), (40, 64), (50, 50)))
    broken = env.vault.media / "shapes/shape-3.png"
    broken.write_bytes(broken.read_bytes()[:60])  # the header says 50x50; the pixels are cut off
    decoded: list[tuple[str, int]] = []  # (file, the slot's rows on screen when it was decoded)
    original_verify = carousel_module.verify_image
    mounted: list[ImageCarousel] = []

    def verify(path, *args):
        decoded.append((path.name, mounted[0].query_one(".carousel-slot").size.height))
        return original_verify(path, *args)

    original_mount = ImageCarousel.on_mount

    def on_mount(self: ImageCarousel) -> None:
        mounted.append(self)
        original_mount(self)
        assert decoded == []  # nothing decoded while mounting, before the first paint

    monkeypatch.setattr(carousel_module, "verify_image", verify)
    monkeypatch.setattr(ImageCarousel, "on_mount", on_mount)
    async with running(env, size=SIZE) as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 3")
        assert mounted == [carousel]
        names = sorted(name for name, _ in decoded)
        assert names == ["shape-1.png", "shape-2.png", "shape-3.png"]  # each once
        # Laid out before any decoding, at the tallest picture's rows from its header...
        rows_before = {rows for _, rows in decoded}
        tallest = fit((40, 64), carousel._cols(), carousel._max_rows())[1]
        assert rows_before == {tallest}
        # ...which stay: the broken picture (50x50 in its header) counts for nothing once decoded.
        assert image_box(carousel)[0] == tallest
        carousel.focus()
        await pilot.press("right", "right")
        await settle(pilot, carousel, "3 / 3")
        missing = carousel.query_one(".carousel-missing")
        assert "image unavailable: shape-3.png" in str(missing.render())
        assert [name for name, _ in decoded].count("shape-3.png") == 1


async def test_the_screen_keeps_drawing_while_the_pictures_are_decoded(env, monkeypatch):
    """The pictures are decoded in a thread; meanwhile the screen goes on drawing what is typed
    (awaited among the screen's after-refresh callbacks, the decoding held its updates back)."""
    import threading

    from tui_agent.ui.chat_screen import ChatScreen

    image_conversation(env)
    release = threading.Event()
    started = threading.Event()
    original_prepare = ImageCarousel._prepare

    def slow_prepare(self: ImageCarousel) -> None:
        started.set()
        release.wait(300)  # held until the test releases it (finally: always), however slow the machine
        original_prepare(self)

    updates: list[str] = []
    original_update = ChatScreen._on_timer_update

    def on_timer_update(self: ChatScreen) -> None:
        updates.append(self.app.conversation_view.composer.text)
        original_update(self)

    monkeypatch.setattr(ImageCarousel, "_prepare", slow_prepare)
    monkeypatch.setattr(ChatScreen, "_on_timer_update", on_timer_update)
    app = make(env)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(None, started.is_set)  # not the pilot's pauses: they wait for every widget's queue
            await app._press_keys(["h", "i"])
            await until(None, lambda: "hi" in updates, what="no frame drawn with the keys")
            assert "hi" in updates  # a frame was drawn with the keys, the decoding still going on
            assert not app.conversation_view.chat_log.query(".carousel-image")
            release.set()
            await settle(pilot, app.conversation_view.chat_log.query_one(ImageCarousel), "1 / 2")
            assert app.conversation_view.chat_log.query(".carousel-image")
    finally:
        release.set()


@pytest.mark.slow
async def test_nothing_waits_among_the_screens_after_refresh_callbacks(env, monkeypatch):
    """A screen runs its after-refresh callbacks one after the other, awaiting each: a coroutine
    there that waits for a picture being shown (which needs the screen) held the screen's updates
    back for good, and a long session's next reply was never drawn. The carousel and the image
    viewer put such work on their own queues."""
    import inspect

    from textual.message_pump import MessagePump

    awaited: list[str] = []
    original = MessagePump.call_after_refresh

    def call_after_refresh(self, callback, *args, **kwargs):
        ours = getattr(callback, "__module__", "").startswith("tui_agent")  # Textual's own may be coroutines
        if ours and inspect.iscoroutinefunction(callback):
            awaited.append(getattr(callback, "__qualname__", repr(callback)))
        return original(self, callback, *args, **kwargs)

    monkeypatch.setattr(MessagePump, "call_after_refresh", call_after_refresh)
    image_conversation(env)
    async with running(env, size=SIZE) as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 2")
        await pilot.resize_terminal(90, 30)
        await pilot.pause(0.3)
        await pilot.resize_terminal(*SIZE)
        await settle(pilot, carousel, "1 / 2")
        carousel.focus()
        await pilot.press("o")  # the image viewer, resized too
        await pilot.pause(0.3)
        await pilot.resize_terminal(100, 35)
        await pilot.pause(0.3)
        await pilot.press("escape")
        await pilot.pause(0.1)
    assert awaited == []
