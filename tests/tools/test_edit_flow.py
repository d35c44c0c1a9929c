"""A fox generated, then edited: through the loop, `/edit`, `tui-agent ask` and the app. The images
server records the source bytes it got; the vision model's request carries the edited picture."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from backends import BOTH_BACKENDS
from fake_openai import Reply, edited_png, png_bytes
from helpers import done, rows, run_turn

from tui_agent.core import events as ev
from tui_agent.core import profiles, slash
from tui_agent.core.tools import edit_image

GENERATE = {"prompt": "a red fox", "path": "animals/fox.png", "count": 1, "reason": "asked"}
EDIT = {"image": "media/animals/fox.png", "prompt": "make it bluer", "path": "animals/fox-blue.png", "reason": "asked"}


def image_urls(message) -> list[str]:
    content = message["content"]
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def use_images_api(env) -> None:
    profiles.set_field(env.profile, "image_backend", "openai")
    profiles.set_field(env.profile, "image_model", "gpt-image-1")


def script_fox_then_edit(env) -> None:
    env.fake.script(
        Reply(tool_calls=[("generate_image", json.dumps(GENERATE))]),
        Reply(text="A red fox."),
        Reply(tool_calls=[("edit_image", json.dumps(EDIT))]),
        Reply(text="The fox, now blue."),
    )


def test_edit_slash_command():
    command = slash.parse("/edit media/animals/fox.png make it bluer")
    assert command.tool == "edit_image"
    assert command.arguments["image"] == "media/animals/fox.png"
    assert command.arguments["prompt"] == "make it bluer"
    assert command.arguments["path"].startswith("edits/fox-make-it-bluer-") and command.arguments["path"].endswith(
        ".png"
    )
    with pytest.raises(slash.SlashError, match=r"usage: /edit <media/path> <words>"):
        slash.parse("/edit media/animals/fox.png")
    with pytest.raises(slash.SlashError, match=r"usage: /edit"):
        slash.parse("/edit")
    assert slash.edit_command("media/animals/fox.png") == "/edit media/animals/fox.png "
    assert (
        slash.parse(slash.edit_command("media/uploads/a.b.jpg") + "crop")
        .arguments["path"]
        .startswith("edits/a-b-crop-")
    )


@BOTH_BACKENDS
async def test_generate_then_edit_switches_to_vision_with_the_new_picture(env):
    use_images_api(env)
    script_fox_then_edit(env)
    events = await run_turn(env, "draw a fox")
    conversation = done(events).conversation_id
    events = await run_turn(env, "make it bluer", conversation)
    assert done(events).status == "complete"
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.role == "image_tool" and finished.result.images == ["media/animals/fox-blue.png"]
    assert [e.model for e in events if isinstance(e, ev.ModelSwitched)] == ["vision-model"]
    fox = (env.vault.media / "animals/fox.png").read_bytes()
    assert env.fake.edit_requests[0].files["image"].data == fox  # the images server got the generated fox
    blue = (env.vault.media / "animals/fox-blue.png").read_bytes()
    assert blue == edited_png(fox) and blue != fox
    requests = env.fake.chat_requests
    assert [r["model"] for r in requests] == ["chat-model", "vision-model", "chat-model", "vision-model"]
    follow_up = requests[3]["messages"]
    # The new picture right after the edit's result, its only pixels; the fox stays where it was
    # made, as a note (a text-only chat model's earlier pictures are not sent again).
    assert image_urls(follow_up[-1]) == [data_url(blue)]
    assert [url for m in follow_up for url in image_urls(m)] == [data_url(blue)]
    assert "[image: media/animals/fox.png (image data not sent with this request)]" in json.dumps(follow_up[:-3])
    tool_result = json.loads(follow_up[-3]["content"])
    assert tool_result["data"]["source"] == "media/animals/fox.png"
    stored = rows(env.vault.db_path, "SELECT role, tool_name FROM messages WHERE role = 'image_tool' ORDER BY id")
    assert stored == [("image_tool", "generate_image"), ("image_tool", "edit_image")]


async def test_edit_slash_runs_the_command_backend_then_the_vision_follow_up(env, tmp_path):
    profiles.set_field(env.profile, "image_command", '["editimage", "--input", "{input}", "{prompt}", "{output}"]')
    (env.vault.uploads / "cat.png").write_bytes(png_bytes((10, 200, 10), (8, 8)))
    env.fake.script(Reply(text="A blue cat."))
    events = await run_turn(env, "/edit media/uploads/cat.png make it blue")
    assert done(events).status == "complete"
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.result.is_ok, finished.result.error
    (made,) = finished.result.images
    assert made.startswith("media/edits/cat-make-it-blue-")
    (request,) = env.fake.chat_requests
    assert request["model"] == "vision-model"
    assert image_urls(request["messages"][-1]) == [data_url((env.vault.root / made).read_bytes())]
    assert (env.vault.uploads / "cat.png").read_bytes() == png_bytes((10, 200, 10), (8, 8))


async def test_a_failed_edit_stays_on_the_chat_model(env):
    # The user names a picture that is not there: the edit fails, the next request stays on the chat model.
    env.fake.script(Reply(tool_calls=[("edit_image", json.dumps(EDIT))]), Reply(text="It failed."))
    events = await run_turn(env, "make media/animals/fox.png bluer")
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.result.error == "not found: media/animals/fox.png"
    assert [r["model"] for r in env.fake.chat_requests] == ["chat-model", "chat-model"]


async def test_the_model_edits_only_pictures_its_conversation_holds(env):
    """A picture of another conversation is out of this one's reach (a page or a file the model read
    cannot send it to the images server), whether it exists or not; the user brings it in by naming it."""
    use_images_api(env)  # an edit that got through would reach the loopback images server
    (env.vault.media / "animals").mkdir(parents=True, exist_ok=True)
    (env.vault.media / "animals" / "fox.png").write_bytes(png_bytes((200, 80, 10), (8, 8)))
    unknown = {**EDIT, "image": "media/animals/wolf.png"}
    env.fake.script(
        Reply(tool_calls=[("edit_image", json.dumps(EDIT)), ("edit_image", json.dumps(unknown))]),
        Reply(text="I cannot reach them."),
    )
    events = await run_turn(env, "make the fox bluer")
    errors = [e.result.error for e in events if isinstance(e, ev.ToolFinished)]
    assert errors == [
        f"{name} is not a picture of this conversation: {edit_image.NOT_HELD}"
        for name in ("media/animals/fox.png", "media/animals/wolf.png")
    ]
    assert env.fake.edit_requests == []  # nothing was sent to the images server
    assert (env.vault.media / "animals" / "fox.png").read_bytes() == png_bytes((200, 80, 10), (8, 8))


def test_ask_generates_a_fox_then_edits_it(env):
    use_images_api(env)
    env.fake.script(
        Reply(tool_calls=[("generate_image", json.dumps(GENERATE))]),
        Reply(tool_calls=[("edit_image", json.dumps(EDIT))]),
        Reply(text="Here is the fox, bluer."),
    )
    argv = [sys.executable, "-m", "tui_agent", "ask", "--new", "draw a fox, then make it bluer"]
    result = subprocess.run([*argv, "--vault", str(env.vault.root)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Here is the fox, bluer.\n"
    assert "→ edit_image media/animals/fox.png -> animals/fox-blue.png: make it bluer" in result.stderr
    assert "← edit_image: ok media/animals/fox-blue.png" in result.stderr
    fox = (env.vault.media / "animals/fox.png").read_bytes()
    blue = (env.vault.media / "animals/fox-blue.png").read_bytes()
    assert env.fake.edit_requests[0].files["image"].data == fox
    last = env.fake.chat_requests[-1]
    assert last["model"] == "vision-model" and image_urls(last["messages"][-1]) == [data_url(blue)]
    log_text = env.vault.log_file.read_text()
    assert f"Endpoint: {env.fake.base_url}/images/edits\nSource: media/animals/fox.png" in log_text


async def test_the_app_generates_edits_pages_and_points_at_a_picture(env):
    from pilot_helpers import children, make, send, until

    from tui_agent.ui.widgets.carousel import ImageCarousel
    from tui_agent.ui.widgets.tool_block import ToolResultView

    use_images_api(env)
    script_fox_then_edit(env)
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "draw a fox")
        await send(app, pilot, "make it bluer")
        generated, edited = children(app, ToolResultView)
        assert [p.relative_to(env.vault.root).as_posix() for p in edited.images] == [
            "media/animals/fox-blue.png",  # the carousel's pages: the edit first, then its source
            "media/animals/fox.png",
        ]
        assert edited.block.title == "Tool result · edit_image · ✓ ok"
        assert "vision-model" in str(app.conversation_view.status_line.render())
        carousel = edited.query_one(ImageCarousel)
        carousel.focus()
        await pilot.press("right")
        assert str(carousel.query_one(".counter").render()) == "2 / 2"
        await pilot.press("e")  # "edit this picture": the page shown goes into the composer
        composer = app.conversation_view.composer
        await until(pilot, lambda: composer.has_focus)
        assert composer.text == "/edit media/animals/fox.png "
        carousel.focus()
        await pilot.press("left", "e")
        await until(pilot, lambda: composer.has_focus)
        assert composer.text == "/edit media/animals/fox-blue.png "
        # Its arrow buttons are for the mouse (they take no focus: issue 37); the keys are the carousel's.
        assert not carousel.query_one("#next").focusable
        env.fake.script(Reply(text="Bluer still."))
        await send(app, pilot, composer.text + "even bluer")
        *_, again = children(app, ToolResultView)
        assert again.result.status == "ok" and len(again.images) == 2
        assert env.fake.edit_requests[-1].files["image"].data == (env.vault.media / "animals/fox-blue.png").read_bytes()
        composer.clear()
        await app.run_action("edit_picture")  # the palette's entry: the newest picture
        assert composer.text.startswith("/edit media/edits/fox-blue-even-bluer-")
        log = app.conversation_view.chat_log
        log.focus()
        log.move_cursor_to(generated)  # the message cursor on the first picture: its menu's action
        await pilot.press("enter")
        await until(pilot, lambda: hasattr(app.screen, "actions"))
        assert ("app.edit_picture", "Edit this picture (/edit in the composer)") in [
            (a.id, a.label) for a in app.screen.actions
        ]
        await pilot.press("escape")
        await app.run_action("edit_picture")
        assert composer.text == "/edit media/animals/fox.png "
    assert env.fake.chat_requests[-1]["model"] == "vision-model"
    # Reopened from the store, the edit still pages through its source and result.
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: len(children(app, ToolResultView)) == 3)
        assert len(children(app, ToolResultView)[1].images) == 2


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
async def test_machine_b_edits_a_picture_machine_a_made(env, tmp_path):
    """Two vault folders on one PostgreSQL database: the source is fetched from the database into
    B's media/ (nothing copied by hand), and B's edit is stored there for A too."""
    import dataclasses

    from tui_agent.core import media_files
    from tui_agent.core.vault import Vault

    use_images_api(env)
    env.fake.script(Reply(tool_calls=[("generate_image", json.dumps(GENERATE))]), Reply(text="A fox."))
    conversation = done(await run_turn(env, "draw a fox")).conversation_id
    fox = (env.vault.media / "animals/fox.png").read_bytes()
    b = dataclasses.replace(env, vault=Vault(tmp_path / "machine-b").init())
    assert not (b.vault.media / "animals/fox.png").exists()
    env.fake.script(Reply(tool_calls=[("edit_image", json.dumps(EDIT))]), Reply(text="Bluer."))
    events = await run_turn(b, "make it bluer", conversation)
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.result.is_ok, finished.result.error
    assert env.fake.edit_requests[0].files["image"].data == fox
    blue = (b.vault.media / "animals/fox-blue.png").read_bytes()
    assert media_files.local_file(env.vault.root, "media/animals/fox-blue.png").read_bytes() == blue  # A has it
    assert image_urls(env.fake.chat_requests[-1]["messages"][-1]) == [data_url(blue)]
