"""F4 in a terminal saves the image's real bytes in the Downloads folder, never over an earlier
copy, and says where (issue 25, item 3)."""

from __future__ import annotations

from pilot_helpers import notifications, running, until
from test_carousel import image_conversation

from tui_agent.core import approvals


async def test_f4_saves_the_real_bytes_and_never_overwrites(env, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))  # no user-dirs.dirs: ~/Downloads
    approvals.approve(approvals.profile_items(env.reload_profile()))  # its settings, approved in this config too
    downloads = home / "Downloads"
    image_conversation(env)
    source = (env.vault.media / "shapes/shape-1.png").read_bytes()
    async with running(env) as (app, pilot):
        await pilot.pause()
        await pilot.press("f4")
        await until(pilot, lambda: (downloads / "shape-1.png").is_file())
        await until(pilot, lambda: any("shape-1" in m for m in notifications(app)))
        assert (downloads / "shape-1.png").read_bytes() == source
        assert f"Saved a copy: {downloads / 'shape-1.png'}" in notifications(app)
        await pilot.press("f4")
        await until(pilot, lambda: (downloads / "shape-1-1.png").is_file())
        await until(pilot, lambda: f"Saved a copy: {downloads / 'shape-1-1.png'}" in notifications(app))
        assert (downloads / "shape-1.png").read_bytes() == source  # the first copy is untouched
        assert (downloads / "shape-1-1.png").read_bytes() == source
        assert not any("to your downloads folder" in m for m in notifications(app))
