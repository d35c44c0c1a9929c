"""Pictures follow the history (issue 27 item 3): two vault folders on one PostgreSQL database,
"machine A" (the ``env`` vault) and "machine B" (another folder, nothing copied). A picture made in
A, through the loop with the fake flux2, shows in B with no step by the user: B's requests to the
model carry it, B's export copies it, B's ``serve`` serves it at ``/media/``, B's app draws it. A
path A took is taken in B too (``exists:``), and a damaged or missing stored picture is one clear
line, not a crash."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv
from fake_openai import Reply
from helpers import done, http_get, run_turn
from mcp_helpers import running_manager
from media_helpers import damage_picture, remove_picture
from pilot_helpers import until
from serve_helpers import TOKEN, start_serve
from store_rows import value

from tui_agent.core import approvals, media_files, profiles
from tui_agent.core.vault import Vault
from tui_agent.ui.app import AgentApp
from tui_agent.ui.widgets.carousel import ImageCarousel

pytestmark = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)

FOX = "media/animals/fox.png"


def machine_b(env, tmp_path: Path):
    """The same store and profile, another vault folder: another machine's."""
    return dataclasses.replace(env, vault=Vault(tmp_path / "machine-b").init())


async def draw_in_a(env, count: int = 1, path: str = "animals/fox.png") -> int:
    arguments = {"prompt": "a red fox", "path": path, "count": count, "reason": "asked"}
    env.fake.script(Reply(tool_calls=[("generate_image", json.dumps(arguments))]), Reply(text="A fox."))
    events = await run_turn(env, "draw a fox")
    assert done(events).status == "complete"
    return done(events).conversation_id


def image_urls(request) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in request["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def texts(request) -> str:
    return json.dumps(request["messages"])


def cli(*args: str, vault: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), *args, "--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd)


async def test_b_sends_a_picture_made_in_a_to_the_model(env, tmp_path):
    conversation = await draw_in_a(env)
    made = (env.vault.root / FOX).read_bytes()
    assert value("SELECT count(*) FROM media_paths WHERE path = {p}", FOX) == 1  # written through at once
    b = machine_b(env, tmp_path)
    assert not (b.vault.root / FOX).exists()
    profiles.set_field(env.profile, "chat_accepts_images", "yes")
    env.fake.script(Reply(text="It is a fox."))
    events = await run_turn(b, "what did you draw?", conversation)
    assert done(events).status == "complete"
    assert image_urls(env.fake.chat_requests[-1]) == [data_url(made)]  # B's context build fetched it
    assert (b.vault.root / FOX).read_bytes() == made  # and keeps it in B's media/, the cache


async def test_b_attaches_a_picture_made_in_a_for_the_vision_model(env, tmp_path):
    await draw_in_a(env)
    made = (env.vault.root / FOX).read_bytes()
    b = machine_b(env, tmp_path)
    env.fake.script(Reply(text="A fox."))
    events = await run_turn(b, f"/attach {FOX} what is this")
    assert done(events).status == "complete"
    request = env.fake.chat_requests[-1]
    assert request["model"] == "vision-model" and image_urls(request) == [data_url(made)]


async def test_a_path_a_took_is_taken_in_b(env, tmp_path):
    await draw_in_a(env)
    runs = (tmp_path / "flux2.log").read_text().count("start ")
    b = machine_b(env, tmp_path)
    arguments = {"prompt": "another fox", "path": "animals/fox.png", "count": 1, "reason": "asked"}
    env.fake.script(Reply(tool_calls=[("generate_image", json.dumps(arguments))]), Reply(text="Taken."))
    events = await run_turn(b, "draw a fox again")
    assert done(events).status == "complete"
    result = value("SELECT content FROM messages WHERE role = 'image_tool' ORDER BY id DESC LIMIT 1")
    assert json.loads(result) == {"status": "error", "error": f"exists: {FOX}"}
    assert (tmp_path / "flux2.log").read_text().count("start ") == runs  # nothing generated in B
    assert not (b.vault.root / FOX).exists()  # and nothing fetched for the check


async def test_a_race_for_a_path_is_decided_by_the_database(env, tmp_path, monkeypatch):
    """A claims ``fox-2`` between B's check and B's claim: B's set fails as a whole, its own files
    and its database claim of ``fox-1`` are taken back, A's picture stays A's."""
    await draw_in_a(env, path="animals/fox-2.png")
    a_digest = hashlib.sha256((env.vault.media / "animals/fox-2.png").read_bytes()).hexdigest()
    b = machine_b(env, tmp_path)
    monkeypatch.setattr(media_files, "taken", lambda root, relative: False)  # the check came too early
    arguments = {"prompt": "two foxes", "path": "animals/fox.png", "count": 2, "reason": "asked"}
    env.fake.script(Reply(tool_calls=[("generate_image", json.dumps(arguments))]), Reply(text="Taken."))
    await run_turn(b, "draw two foxes")
    result = json.loads(value("SELECT content FROM messages WHERE role = 'image_tool' ORDER BY id DESC LIMIT 1"))
    assert result["error"] == "exists: media/animals/fox-2.png (another generation made it first)"
    assert sorted(p.name for p in (b.vault.media / "animals").glob("*")) == []
    assert value("SELECT count(*) FROM media_paths WHERE path = 'media/animals/fox-1.png'") == 0
    assert value("SELECT sha256 FROM media_paths WHERE path = 'media/animals/fox-2.png'") == a_digest


async def test_b_exports_a_picture_made_in_a(env, tmp_path):
    conversation = await draw_in_a(env)
    made = (env.vault.root / FOX).read_bytes()
    b = machine_b(env, tmp_path)
    out = tmp_path / "export" / "fox.md"
    result = cli("history", "export", str(conversation), "--out", str(out), vault=b.vault.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out} and 1 image(s) in fox_files/"
    assert (out.parent / "fox_files" / "animals_fox.png").read_bytes() == made


@pytest.mark.slow
async def test_b_serves_a_picture_made_in_a_and_says_when_one_is_damaged(env, tmp_path):
    conversation = await draw_in_a(env, count=2)
    made = (env.vault.media / "animals/fox-1.png").read_bytes()
    b = machine_b(env, tmp_path)
    damage_picture("media/animals/fox-2.png")
    served = start_serve(b.vault.root, tmp_path / "serve.out")
    try:
        picture = http_get(f"{served.base}/media/animals/fox-1.png?token={TOKEN}")
        assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
        assert picture.content == made
        gallery = http_get(f"{served.base}/gallery/{conversation}?token={TOKEN}")
        assert (
            gallery.status_code == 200 and 'class="counter">2 / 2<' in gallery.text
        )  # both, fetched by /media/ when shown
        damaged = http_get(f"{served.base}/media/animals/fox-2.png?token={TOKEN}")
        assert damaged.status_code == 503
        assert "the database's copy of media/animals/fox-2.png is damaged" in damaged.text
        assert http_get(f"{served.base}/media/animals/nothing.png?token={TOKEN}").status_code == 404
        assert served.process.poll() is None  # still serving
    finally:
        served.stop()
    assert (b.vault.media / "animals/fox-1.png").read_bytes() == made
    assert not (b.vault.media / "animals/fox-2.png").exists()  # a damaged copy never reaches the cache


async def settle(pilot, carousel: ImageCarousel) -> str:
    """Wait until the carousel shows its picture (laid out) or says why it cannot; the text it
    says ("" for a picture)."""
    for _ in range(400):
        await pilot.pause(0.05)
        missing = carousel.query(".carousel-missing")
        if missing:
            return str(missing.first().render())
        images = carousel.query(".carousel-image")
        if images and images.first().size.height > 0:
            return ""
    raise AssertionError("the carousel showed nothing")


async def test_b_app_draws_a_picture_made_in_a(env, tmp_path):
    await draw_in_a(env)
    made = (env.vault.root / FOX).read_bytes()
    b = machine_b(env, tmp_path)
    app = AgentApp(b.vault, images="halfcell", clock=lambda: 0.0, animate=False, check_endpoint=False)
    async with app.run_test(size=(120, 40)) as pilot:
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        assert await settle(pilot, carousel) == ""
        image = carousel.query_one(".carousel-image")
        assert image.size.width > 0 and image.size.height > 0
    assert (b.vault.root / FOX).read_bytes() == made


async def test_a_damaged_or_missing_stored_picture_is_one_clear_line_in_b(env, tmp_path):
    conversation = await draw_in_a(env, count=2)
    b = machine_b(env, tmp_path)
    damage_picture("media/animals/fox-1.png")
    remove_picture(env.vault.root, "media/animals/fox-2.png")  # gone from A and from the database
    # The app: each carousel page says why, the app goes on.
    app = AgentApp(b.vault, images="halfcell", clock=lambda: 0.0, animate=False, check_endpoint=False)
    async with app.run_test(size=(120, 40)) as pilot:
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        first = await settle(pilot, carousel)
        assert first.startswith("image unavailable: fox-1.png\nthe database's copy of media/animals/fox-1.png")
        assert "is damaged" in first
        carousel.focus()
        await pilot.press("right")

        def missing_text() -> str:
            found = carousel.query(".carousel-missing")
            return str(found.first().render()) if found else ""

        await until(pilot, lambda: "fox-2" in missing_text(), what="the second picture's note never came")
        second = missing_text()
        assert "media/animals/fox-2.png is neither in this vault nor in the database" in second
    # The model: a note in place of each picture.
    profiles.set_field(env.profile, "chat_accepts_images", "yes")
    env.fake.script(Reply(text="ok"))
    events = await run_turn(b, "what did you draw?", conversation)
    assert done(events).status == "complete"
    request = env.fake.chat_requests[-1]
    assert image_urls(request) == []
    assert "[image no longer available: media/animals/fox-1.png]" in texts(request)
    assert "[image no longer available: media/animals/fox-2.png]" in texts(request)
    # The export: the damaged one is named on stderr, the run succeeds.
    out = tmp_path / "fox.md"
    result = cli("history", "export", str(conversation), "--out", str(out), vault=b.vault.root)
    assert result.returncode == 0, result.stderr
    assert "warning: an image was left out: the database's copy of media/animals/fox-1.png is damaged" in result.stderr
    assert out.read_text().count("*(image no longer in the vault)*") == 2
    # The show_image tool: a failure the model reads.
    env.fake.script(Reply(tool_calls=[("show_image", json.dumps({"path": "animals/fox-1.png"}))]), Reply(text="no"))
    await run_turn(b, "show it", conversation)
    shown = json.loads(value("SELECT content FROM messages WHERE role = 'show_tool' ORDER BY id DESC LIMIT 1"))
    assert shown["status"] == "error" and "is damaged" in shown["error"]
    assert not (b.vault.media / "animals").exists() or not list((b.vault.media / "animals").iterdir())


@pytest.mark.slow
async def test_an_mcp_picture_made_in_a_shows_in_b(env, tmp_path, monkeypatch):
    from mcp_helpers import add_fixture

    from tui_agent.core import events as ev
    from tui_agent.core.tools.registry import ToolRegistry

    monkeypatch.setenv("FIXTURE_MCP_PIDS", str(tmp_path / "mcp-pids.txt"))
    add_fixture()
    registry = ToolRegistry()
    async with running_manager(env, registry):
        env.fake.script(Reply(tool_calls=[("picture", '{"color": "green"}')]), Reply(text="A green square."))
        events = await run_turn(env, "draw", registry=registry)
        [image] = next(e for e in events if isinstance(e, ev.ToolFinished)).result.images
    b = machine_b(env, tmp_path)
    assert media_files.local_file(b.vault.root, image).read_bytes() == (env.vault.root / image).read_bytes()


async def test_a_picture_attached_in_a_shows_in_b(env, tmp_path):
    from fake_openai import png_bytes

    from tui_agent.core.attachments import import_image

    outside = tmp_path / "holiday.png"
    outside.write_bytes(png_bytes((10, 20, 30)))
    relative = await import_image(env.vault, str(outside))
    assert relative.startswith("media/uploads/holiday-")
    b = machine_b(env, tmp_path)
    assert media_files.local_file(b.vault.root, relative).read_bytes() == outside.read_bytes()


async def test_f4_in_b_saves_a_picture_made_in_a_even_when_not_cached(env, tmp_path, monkeypatch):
    """F4 reads the picture through the same helper: gone from B's cache (cleared by hand while the
    app runs), it is fetched again, and the copy holds A's bytes."""
    from pilot_helpers import until

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))  # no user-dirs.dirs: ~/Downloads
    approvals.approve(approvals.profile_items(env.reload_profile()))  # its settings, approved in this config too
    await draw_in_a(env)
    made = (env.vault.root / FOX).read_bytes()
    b = machine_b(env, tmp_path)
    app = AgentApp(b.vault, images="halfcell", clock=lambda: 0.0, animate=False, check_endpoint=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await settle(pilot, app.conversation_view.chat_log.query_one(ImageCarousel)) == ""
        (b.vault.root / FOX).unlink()  # the cache emptied
        await pilot.press("f4")
        await until(pilot, lambda: (home / "Downloads" / "fox.png").is_file())
        assert (home / "Downloads" / "fox.png").read_bytes() == made


def test_an_import_in_a_takes_its_pictures_to_b(env, tmp_path):
    """A conversation imported in A names pictures that only A's media/ has (copied there with the
    export): the import stores them in the database, so B shows them too."""
    from fake_openai import png_bytes

    picture = png_bytes((200, 100, 0))
    (env.vault.media / "trip").mkdir()
    (env.vault.media / "trip" / "beach.png").write_bytes(picture)
    exported = {
        "format": "tui-agent-conversation",
        "version": 1,
        "conversation": {"title": "trip"},
        "messages": [
            {"role": "user", "content": "look", "attachments": [{"path": "media/trip/beach.png", "position": 0}]}
        ],
    }
    source = tmp_path / "trip.json"
    source.write_text(json.dumps(exported))
    result = cli("history", "import", str(source), vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    b = machine_b(env, tmp_path)
    assert media_files.local_file(b.vault.root, "media/trip/beach.png").read_bytes() == picture
