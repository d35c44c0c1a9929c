"""The protocol choice from real terminals' replies, tmux passthrough, and the Sixel widget's output
decoded back to pixels.

Replies recorded on this machine under Xvfb (bench/screenshots.py): xterm -ti vt340 with 256
registers, mlterm 3.9, kitty 0.26.5 (Debian 12).
"""

from __future__ import annotations

import pytest
from PIL import Image
from pilot_helpers import running, until
from rich.control import Control
from sixel_decode import decode
from test_carousel import image_conversation, settle
from textual.geometry import Region

from tui_agent.ui.terminal_probe import KITTY_QUERY, parse, tmux_wrap
from tui_agent.ui.widgets.carousel import ImageCarousel

XTERM = "\x1bP>|XTerm(379)\x1b\\\x1b[?1;0;256S\x1b[?63;1;2;4;6;9;15;16;22;28c"
XTERM_16 = "\x1bP>|XTerm(379)\x1b\\\x1b[?1;0;16S\x1b[?63;1;2;4;6;9;15;16;22;28c"
MLTERM = "\x1b[?1;0;256S\x1b[?63;1;2;3;4;6;7;15;18;22;29c"
KITTY_026 = "\x1bP>|kitty(0.26.5)\x1b\\\x1b_Gi=31;OK\x1b\\\x1b[?62;c"
KITTY_035 = "\x1bP>|kitty(0.35.2)\x1b\\\x1b_Gi=31;OK\x1b\\\x1b[?62;c"
PLAIN = "\x1b[?62;22c"


@pytest.mark.parametrize(
    ("replies", "protocol", "colors"),
    [
        (XTERM, "sixel", 256),
        (XTERM_16, "sixel", 16),
        (MLTERM, "sixel", 256),
        (KITTY_026, "kitty-direct", 256),
        (KITTY_035, "kitty", 256),
        (PLAIN, "halfcell", 256),
        ("", "halfcell", 256),
    ],
)
def test_the_choice_from_recorded_replies(replies, protocol, colors):
    probe = parse(replies)
    assert probe.protocol == protocol
    assert probe.colors == colors
    assert probe.describe().startswith(f"image protocol: {protocol} (")


def test_the_log_line_names_the_da1_reply():
    assert parse(XTERM).describe().startswith("image protocol: sixel (DA1 reply 63;1;2;4;6;9;15;16;22;28")


def test_tmux_without_passthrough_is_halfcell_and_with_it_goes_through():
    assert parse("\x1b[?1;2c", in_tmux=True, passthrough=False).protocol == "halfcell"
    through = parse("\x1b[?1;2c", in_tmux=True, passthrough=True, outer="XTerm(379) xterm ")
    assert (through.protocol, through.tmux) == ("sixel", True)


def test_tmux_wrap_doubles_every_escape():
    wrapped = tmux_wrap("\x1bPq#0;2;0;0;0~\x1b\\")
    assert wrapped.startswith("\x1bPtmux;") and wrapped.endswith("\x1b\\")
    inner = wrapped[len("\x1bPtmux;") : -2]
    assert inner.replace("\x1b\x1b", "\x1b") == "\x1bPq#0;2;0;0;0~\x1b\\"
    assert "\x1b" not in inner.replace("\x1b\x1b", "")


def test_the_kitty_query_is_never_sent_raw_in_tmux(monkeypatch):
    """tmux takes an APC string as the pane title: the probe leaves it out inside tmux."""
    from tui_agent.ui import terminal_probe

    sent: list[str] = []
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    monkeypatch.setattr(terminal_probe, "tmux_passthrough_allowed", lambda: False)
    monkeypatch.setattr(terminal_probe, "_read_replies", lambda i, o, queries, t: sent.append(queries) or "")
    monkeypatch.setattr(terminal_probe.sys, "__stdin__", _Tty())
    monkeypatch.setattr(terminal_probe.sys, "__stdout__", _Tty())
    result = terminal_probe.probe()
    assert result.protocol == "halfcell"
    (queries,) = sent
    assert KITTY_QUERY not in queries and "\x1b_" not in queries
    assert queries.endswith("\x1b[c")


class _Tty:
    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return -1


def forced_probe(monkeypatch, forced: str, replies: str):
    """The probe on a terminal (outside tmux) that answers ``replies``, with TUI_AGENT_IMAGES=``forced``."""
    from tui_agent.ui import terminal_probe

    monkeypatch.setenv("TUI_AGENT_IMAGES", forced)
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setattr(terminal_probe, "_read_replies", lambda i, o, q, t: replies)
    monkeypatch.setattr(terminal_probe.sys, "__stdin__", _Tty())
    monkeypatch.setattr(terminal_probe.sys, "__stdout__", _Tty())
    return terminal_probe.probe()


def test_the_override_wins(monkeypatch):

    result = forced_probe(monkeypatch, "halfcell", XTERM)
    assert result.protocol == "halfcell" and "TUI_AGENT_IMAGES=halfcell" in result.reason


async def test_the_sixel_widget_draws_the_image_it_shows(env):
    """The Sixel string the widget writes decodes to the picture, scaled to its cells."""
    image_conversation(env, sizes=((64, 40),))
    async with running(env, images="sixel") as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel)

        def drawn() -> bool:  # the Sixel widget's inner one laid out (later than a fixed pause on a loaded machine)
            images = carousel.query(".carousel-image")
            return bool(images and images.first().children and images.first().children[0].size.height > 0)

        await until(pilot, drawn, what="the Sixel picture never laid out")
        image = carousel.query_one(".carousel-image")
        impl = image.children[0]
        lines = impl.render_lines(Region(0, 0, impl.size.width, impl.size.height))
        text = "".join(segment.text for strip in lines for segment in strip)
        start = text.index("\x1bP")
        data = text[start : text.index("\x1b\\", start) + 2]
        decoded = decode(data)
        assert not decoded.defined_after_pixels
        from tui_agent.ui.images import cell_size

        cell_w, cell_h = cell_size()
        pixel_height = impl.size.height * cell_h
        # whole six-pixel bands only: the last band never spills into the next text row
        assert decoded.image.size == (impl.size.width * cell_w, pixel_height - pixel_height % 6)
        # after the image the cursor goes back to the widget's last row (not the row below it)
        region = impl.screen.find_widget(impl).visible_region
        assert text.endswith(Control.move_to(region.right, region.bottom - 1).segment.text)
        source = Image.open(env.vault.media / "shapes/shape-1.png").convert("RGB").resize(decoded.image.size)
        centre = (decoded.image.size[0] // 2, decoded.image.size[1] // 2)
        assert all(
            abs(a - b) <= 3 for a, b in zip(decoded.image.getpixel(centre), source.getpixel(centre), strict=True)
        )


def kitty_commands(text: str) -> list[tuple[dict[str, str], str]]:
    """Every kitty graphics command in ``text`` as (keys, payload)."""
    import re

    out = []
    for control, payload in re.findall(r"\x1b_G([^;\x1b]*);?([^\x1b]*)\x1b\\", text):
        keys = dict(part.split("=", 1) for part in control.split(",") if part)
        out.append((keys, payload))
    return out


@pytest.mark.slow
async def test_kitty_direct_placement_sends_the_file_and_places_it(env, monkeypatch):
    """For kitty 0.26: the PNG goes over once (decoded here to the same pixels) and is placed over
    exactly the widget's cells; covering, leaving or closing deletes the placement."""
    import base64
    import io

    from tui_agent.ui import kitty_widget

    written: list[str] = []
    monkeypatch.setattr(kitty_widget, "write", lambda widget, data: written.append(data))
    image_conversation(env, sizes=((64, 40), (40, 64)))
    async with running(env, images="kitty-direct") as (app, pilot):
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 2")
        image = carousel.query_one(".carousel-image")
        assert isinstance(image, kitty_widget.KittyImage)
        image._sent = False  # render as the first time (the app's first render already went out)
        lines = image.render_lines(Region(0, 0, image.size.width, image.size.height))
        text = "".join(segment.text for strip in lines for segment in strip)
        commands = kitty_commands(text)
        sent = "".join(payload for keys, payload in commands if keys.get("a") == "t" or "a" not in keys)
        png = base64.b64decode(sent)
        source = env.vault.media / "shapes/shape-1.png"
        assert png == source.read_bytes()
        assert Image.open(io.BytesIO(png)).convert("RGB").tobytes() == Image.open(source).convert("RGB").tobytes()
        (placement,) = [keys for keys, _ in commands if keys.get("a") == "p"]
        assert (int(placement["c"]), int(placement["r"])) == (image.size.width, image.size.height)
        assert placement["q"] == "2" and placement["C"] == "1" and "U" not in placement
        # a second render only moves the placement: the file is not sent again
        again = kitty_commands(
            "".join(s.text for strip in image.render_lines(Region(0, 0, *image.size)) for s in strip)
        )
        assert [keys["a"] for keys, _ in again if "a" in keys] == ["p"]
        # the command palette covers it: the placement (and the data: kitty may evict it) goes away
        deleted = {"a": "d", "d": "I", "i": str(image.image_id), "q": "2"}
        await pilot.press("ctrl+p")
        await until(pilot, lambda: any(kitty_commands(w)[0][0] == deleted for w in written), what="never deleted")
        assert any(kitty_commands(w)[0][0] == {"a": "d", "d": "I", "i": str(image.image_id), "q": "2"} for w in written)
        written.clear()
        await pilot.press("escape")
        await until(pilot, lambda: image._placed, what="never placed again")
        assert image._placed  # placed again once the chat screen is back on top
        # the next image replaces it: the old one is freed
        carousel.focus()
        await pilot.press("right")
        await settle(pilot, carousel, "2 / 2")
        assert any(kitty_commands(w)[0][0] == {"a": "d", "d": "I", "i": str(image.image_id), "q": "2"} for w in written)
        # A render that still comes for the replaced picture draws nothing and places nothing (it
        # asked for its screen: NoScreen ended the app in a real kitty at the carousel's next).
        assert not image.is_attached
        blank = image.render_lines(Region(0, 0, 10, 4))
        assert ["".join(segment.text for segment in strip) for strip in blank] == [" " * 10] * 4


def test_forcing_kitty_on_an_old_kitty_keeps_direct_placement(monkeypatch):

    result = forced_probe(monkeypatch, "kitty", KITTY_026)
    assert result.protocol == "kitty-direct" and result.reason.startswith("TUI_AGENT_IMAGES=kitty")
