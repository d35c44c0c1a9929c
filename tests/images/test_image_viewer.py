"""F3 / o open the full-size image screen; its actions report only what really happened."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pilot_helpers import notifications, running, until
from test_carousel import image_conversation, settle

from tui_agent.ui import image_open
from tui_agent.ui.screens.image_viewer import ImageViewerScreen
from tui_agent.ui.widgets.carousel import ImageCarousel


async def open_viewer(app, pilot) -> ImageViewerScreen:
    carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
    await settle(pilot, carousel, "1 / 2")
    await pilot.press("f3")
    await until(pilot, lambda: isinstance(app.screen, ImageViewerScreen) and app.screen.query(".viewer-image"))
    assert isinstance(app.screen, ImageViewerScreen)
    return app.screen


def fake_viewer(tmp_path: Path, exit_code: int, message: str = "") -> Path:
    folder = tmp_path / "viewer-bin"
    folder.mkdir()
    script = folder / "xdg-open"
    script.write_text(
        f'#!/bin/sh\necho "$@" > "{tmp_path / "viewer-args"}"\n'
        + (f'echo "{message}" >&2\n' if message else "")
        + f"exit {exit_code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.mark.slow
async def test_f3_opens_the_full_size_screen_and_moves_through_the_images(env):
    image_conversation(env)
    async with running(env) as (app, pilot):
        viewer = await open_viewer(app, pilot)
        image = viewer.query_one(".viewer-image")
        carousel_image = app.screen_stack[0].query_one(".carousel-image")
        assert image.size.width > carousel_image.size.width  # bigger than in the chat
        assert "1 / 2 · shape-1.png" in str(viewer.query_one("#viewer-title").render())
        await pilot.press("right")
        await until(pilot, lambda: viewer.current.name == "shape-2.png")
        assert "2 / 2 · shape-2.png" in str(viewer.query_one("#viewer-title").render())
        await pilot.press("left")
        await until(pilot, lambda: viewer.current.name == "shape-1.png")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ImageViewerScreen))


@pytest.mark.slow
async def test_save_a_copy_names_the_real_file(env, tmp_path, monkeypatch):
    image_conversation(env)
    downloads = tmp_path / "Downloads"
    monkeypatch.setattr(image_open, "downloads_dir", lambda: downloads)
    async with running(env) as (app, pilot):
        await open_viewer(app, pilot)
        await pilot.press("s")
        await pilot.press("s")
        await until(pilot, lambda: sum(m.startswith("Saved a copy: ") for m in notifications(app)) == 2)
        source = (env.vault.media / "shapes/shape-1.png").read_bytes()
        assert (downloads / "shape-1.png").read_bytes() == source
        assert (downloads / "shape-1-1.png").read_bytes() == source  # the second save does not overwrite
        assert f"Saved a copy: {downloads / 'shape-1.png'}" in notifications(app)
        assert f"Saved a copy: {downloads / 'shape-1-1.png'}" in notifications(app)


async def test_save_into_an_unwritable_place_says_so(env, tmp_path, monkeypatch):
    image_conversation(env)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setattr(image_open, "downloads_dir", lambda: blocker)
    async with running(env) as (app, pilot):
        await open_viewer(app, pilot)
        await pilot.press("s")
        await until(pilot, lambda: any("copy" in m for m in notifications(app)))
        (message,) = [m for m in notifications(app) if "copy" in m]
        assert message.startswith("Could not save a copy of shape-1.png")


@pytest.mark.slow
async def test_no_viewer_installed_says_so(env, monkeypatch, tmp_path):
    image_conversation(env)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    async with running(env) as (app, pilot):
        await open_viewer(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: any(m.startswith("No external image viewer found") for m in notifications(app)))
        assert not any("Saved" in m for m in notifications(app))


async def test_the_viewer_runs_and_is_reaped(env, monkeypatch, tmp_path):
    image_conversation(env)
    monkeypatch.setenv("PATH", f"{fake_viewer(tmp_path, 0)}{os.pathsep}{os.environ['PATH']}")
    started = []
    real_open = image_open.open_external
    monkeypatch.setattr(image_open, "open_external", lambda app, path: started.append(real_open(app, path)))
    async with running(env) as (app, pilot):
        await open_viewer(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: started and started[0].returncode is not None)
        (process,) = started
        assert process.returncode == 0
        assert not Path(f"/proc/{process.pid}").exists()  # reaped: no zombie left
        assert (tmp_path / "viewer-args").read_text().strip() == str(env.vault.media / "shapes/shape-1.png")
        assert "Asked xdg-open to open shape-1.png" in notifications(app)


@pytest.mark.slow
async def test_a_failing_viewer_is_reported(env, monkeypatch, tmp_path):
    image_conversation(env)
    monkeypatch.setenv("PATH", f"{fake_viewer(tmp_path, 4, 'no method available for opening it')}{os.pathsep}/usr/bin")
    async with running(env) as (app, pilot):
        await open_viewer(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: any("could not open" in m for m in notifications(app)))
        assert "xdg-open could not open the image: no method available for opening it" in notifications(app)
