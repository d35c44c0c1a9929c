"""edit_image: the images API's /v1/images/edits (multipart, parsed by the loopback server), the
command backend's {input} with a real program (tests/bin/editimage), and seed 000's error table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fake_openai import Reply, edited_png, png_bytes
from repo_paths import TESTS

from tui_agent.core import profiles
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.edit_image import EditImageTool
from tui_agent.core.tools.image_backends import without_missing
from tui_agent.core.tools.registry import default_registry

FOX = png_bytes((200, 60, 20), (16, 12))
EDIT_COMMAND = '["editimage", "--input", "{input}", "{prompt}", "{output}"]'


@pytest.fixture
def fox(env) -> Path:
    path = env.vault.media / "animals" / "fox.png"
    path.parent.mkdir(parents=True)
    path.write_bytes(FOX)
    return path


async def edit(env, **arguments):
    ctx = ToolContext(env.vault, env.reload_profile())
    arguments.setdefault("reason", "test")
    return await default_registry().execute("edit_image", arguments, ctx)


def use_images_api(env, model: str = "gpt-image-1") -> None:
    profiles.set_field(env.profile, "image_backend", "openai")
    profiles.set_field(env.profile, "image_model", model)


def program_runs(tmp_path: Path) -> list[dict]:
    log = tmp_path / "flux2.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# ------------------------------------------------------------------ images API


async def test_images_api_gets_the_source_bytes_as_multipart_and_the_edit_is_stored(env, fox):
    use_images_api(env)
    result = await edit(env, image="media/animals/fox.png", prompt="make it bluer", path="animals/fox-blue.png")
    assert result.to_dict() == {
        "status": "ok",
        "data": {
            "paths": ["media/animals/fox-blue.png"],
            "source": "media/animals/fox.png",
            "prompt": "make it bluer",
            "model": "gpt-image-1",
            "count": 1,
        },
    }
    assert result.images == ["media/animals/fox-blue.png"]
    (request,) = env.fake.edit_requests
    assert request.content_type.startswith("multipart/form-data; boundary=")
    assert request.fields == {"prompt": "make it bluer", "model": "gpt-image-1", "n": "1"}
    assert set(request.files) == {"image"}
    assert request.files["image"].data == FOX  # the source's bytes arrived, whole
    assert (request.files["image"].filename, request.files["image"].content_type) == ("fox.png", "image/png")
    assert (env.vault.media / "animals/fox-blue.png").read_bytes() == edited_png(FOX)
    assert fox.read_bytes() == FOX
    assert env.fake.image_requests == []  # never a generation instead
    assert (
        "[IMAGE TOOL]\nSelected model: gpt-image-1\n"
        f"Endpoint: {env.fake.base_url}/images/edits\nSource: media/animals/fox.png\n"
    ) in env.vault.log_file.read_text()


async def test_our_multipart_is_what_openai_python_sends(env, fox):
    """The fixture is openai-python itself (resources/images.py ``Images.edit``: ``image`` and
    ``mask`` as files, ``prompt``, ``model``, ``n`` as form fields): the same server reads our
    request and the SDK's the same way."""
    import openai

    mask = env.vault.media / "animals" / "mask.png"
    mask.write_bytes(png_bytes((0, 0, 0), (16, 12)))
    client = openai.AsyncOpenAI(base_url=env.fake.base_url, api_key="x", max_retries=0)
    answer = await client.images.edit(
        image=("fox.png", FOX, "image/png"),
        mask=("mask.png", mask.read_bytes(), "image/png"),
        prompt="a hat",
        model="gpt-image-1",
        n=1,
    )
    assert answer.data and answer.data[0].b64_json
    use_images_api(env)
    result = await edit(
        env, image="media/animals/fox.png", mask="media/animals/mask.png", prompt="a hat", path="animals/hat.png"
    )
    assert result.is_ok, result.error
    sdk, ours = env.fake.edit_requests
    assert ours.fields == sdk.fields
    assert {k: (f.filename, f.content_type, f.data) for k, f in ours.files.items()} == {
        k: (f.filename, f.content_type, f.data) for k, f in sdk.files.items()
    }


@pytest.mark.parametrize("answer", ["url", "data_url"])
async def test_an_answer_by_url_is_downloaded(env, fox, answer):
    use_images_api(env, "dall-e-2")
    env.fake.edit_answer = answer
    result = await edit(env, image="animals/fox.png", prompt="bluer", path="animals/by-url.png", count=2)
    assert result.is_ok, result.error
    assert result.data["paths"] == ["media/animals/by-url-1.png", "media/animals/by-url-2.png"]
    assert (env.vault.media / "animals/by-url-2.png").read_bytes() == edited_png(FOX)
    assert len(env.fake.edit_requests) == 2


@pytest.mark.parametrize("status", [404, 405])
async def test_a_server_without_edits_says_so_in_one_line(env, fox, status):
    use_images_api(env)
    if status == 404:
        env.fake.edits_enabled = False  # the route is missing, as on a server that only generates
    else:
        env.fake.edit_replies.append(Reply(status=405, error_message="Method Not Allowed"))
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/no.png")
    assert result.error == (
        f"images API cannot edit pictures: {env.fake.base_url}/images/edits answered {status} (this server "
        "has no /images/edits; use one that implements it, such as OpenAI's with gpt-image-1)"
    )
    assert "\n" not in result.error
    assert env.fake.image_requests == []
    assert files_under(env.vault.media) == {"animals/fox.png"}


async def test_images_api_failure_and_timeout_leave_nothing(env, fox):
    use_images_api(env)
    env.fake.edit_replies.append(Reply(status=500, error_message="the GPU fell over"))
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/x.png")
    assert result.error == "images API failed (500): the GPU fell over"
    profiles.set_field(env.profile, "image_timeout_s", "1")
    env.fake.edit_replies.append(Reply(hang_s=3))
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/x.png")
    assert result.error == "images API timed out after 1s"
    assert files_under(env.vault.media) == {"animals/fox.png"}


# ------------------------------------------------------------------ the command


async def test_command_backend_passes_a_copy_of_the_source_as_input(env, fox, tmp_path):
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    result = await edit(env, image="media/animals/fox.png", prompt="TAMPER make it bluer", path="animals/b.png")
    assert result.is_ok, result.error
    (run,) = program_runs(tmp_path)
    assert run["input_sha256"] == hashlib.sha256(FOX).hexdigest()  # it read the source's bytes
    assert run["input"] != str(fox) and not Path(run["input"]).exists()  # a private copy, gone now
    assert run["prompt"] == "TAMPER make it bluer"
    assert fox.read_bytes() == FOX  # the program overwrote its input: not the vault's picture
    from PIL import Image

    with Image.open(env.vault.media / "animals/b.png") as made:
        assert made.size == (16, 12) and made.getpixel((0, 0)) == (100, 30, 255)
    log_text = env.vault.log_file.read_text()
    assert f"Endpoint: {TESTS / 'bin' / 'editimage'}\nSource: media/animals/fox.png\n" in log_text


async def test_command_with_a_mask_placeholder(env, fox, tmp_path):
    profiles.set_field(
        env.profile, "image_command", '["editimage", "--input", "{input}", "--mask", "{mask}", "{prompt}", "{output}"]'
    )
    mask = env.vault.media / "animals/mask.png"
    mask.write_bytes(png_bytes((0, 0, 0), (16, 12)))
    result = await edit(env, image="media/animals/fox.png", mask="media/animals/mask.png", prompt="p", path="m.png")
    assert result.is_ok, result.error
    assert program_runs(tmp_path)[0]["mask_sha256"] == hashlib.sha256(mask.read_bytes()).hexdigest()
    result = await edit(env, image="media/animals/fox.png", prompt="p", path="nomask.png")  # no mask: no --mask
    assert result.is_ok, result.error
    assert program_runs(tmp_path)[1]["argv"][:2] == ["--input", program_runs(tmp_path)[1]["input"]]
    assert "--mask" not in program_runs(tmp_path)[1]["argv"]


async def test_a_command_without_input_cannot_edit_and_never_runs(env, fox, tmp_path):
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/b.png")
    assert result.error == (
        "flux2 cannot edit pictures: image_command has no {input} placeholder (add one where the program "
        "takes the source picture, or use image_backend openai with a server that edits)"
    )
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    (env.vault.media / "m.png").write_bytes(png_bytes())
    result = await edit(env, image="media/animals/fox.png", mask="media/m.png", prompt="x", path="animals/b.png")
    assert result.error.startswith("editimage cannot use a mask: image_command has no {mask} placeholder")
    assert program_runs(tmp_path) == []
    assert not (tmp_path / "flux2.log").exists()
    assert files_under(env.vault.media) == {"animals/fox.png", "m.png"}


async def test_one_template_generates_too(env, tmp_path):
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    ctx = ToolContext(env.vault, env.reload_profile())
    arguments = {"prompt": "a fox", "path": "fox.png", "count": 1, "reason": "t"}
    result = await default_registry().execute("generate_image", arguments, ctx)
    assert result.is_ok, result.error
    (run,) = program_runs(tmp_path)
    assert run["argv"] == ["a fox", run["output"]] and "input" not in run  # no --input {input}
    assert (env.vault.media / "fox.png").is_file()


def test_words_of_a_missing_picture_are_left_out():
    argv = ["p", "--image-path", "{input}", "--mask={mask}", "-o", "{output}", "{prompt}", "{input}"]
    assert without_missing(argv, {}) == ["p", "-o", "{output}", "{prompt}"]
    assert without_missing(argv, {"input": "/x"}) == [
        "p",
        "--image-path",
        "{input}",
        "-o",
        "{output}",
        "{prompt}",
        "{input}",
    ]
    assert without_missing(["p", "{output}", "{input}"], {}) == ["p", "{output}"]


# ------------------------------------------------------------------ seed 000's table, for edits


async def test_missing_source(env, tmp_path):
    result = await edit(env, image="media/animals/nothing.png", prompt="bluer", path="animals/b.png")
    assert result.to_dict() == {"status": "error", "error": "not found: media/animals/nothing.png"}
    assert program_runs(tmp_path) == [] and files_under(env.vault.media) == set()


SOURCES_OUTSIDE = [
    "/etc/passwd",
    "../agent.db",
    "media/../agent.db",
    "animals/../../agent.db",
    "..\\agent.db",
    "logs/agent.log",
    "media/animals/fox.png\x00.txt",
    "out/picture.png",  # out is a symlink to a folder outside media/
    "",
]


@pytest.mark.parametrize("source", SOURCES_OUTSIDE)
async def test_source_outside_media_or_traversal_is_refused(env, fox, tmp_path, source):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "picture.png").write_bytes(png_bytes())
    (env.vault.media / "out").symlink_to(outside, target_is_directory=True)
    use_images_api(env)
    result = await edit(env, image=source, prompt="bluer", path="animals/b.png")
    assert result.status == "error"
    assert result.error.startswith("invalid image: must be a vault picture under media/"), result.error
    assert env.fake.edit_requests == []
    assert files_under(env.vault.media) == {"animals/fox.png"} and files_under(outside) == {"picture.png"}


async def test_target_traversal_is_refused(env, fox, tmp_path):
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="../escape.png")
    assert result.error == "invalid path: must be relative, alphanumeric/dashes/underscores, end with .png"
    assert not (env.vault.root / "escape.png").exists()


async def test_existing_target_and_the_source_itself_are_never_overwritten(env, fox, tmp_path):
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/fox.png")
    assert result.to_dict() == {"status": "error", "error": "exists: media/animals/fox.png"}
    (env.vault.media / "animals/fox-2.png").write_bytes(b"keep me")
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/fox.png", count=2)
    assert result.error == "exists: media/animals/fox-1.png" or result.error == "exists: media/animals/fox-2.png"
    assert program_runs(tmp_path) == []
    assert fox.read_bytes() == FOX and (env.vault.media / "animals/fox-2.png").read_bytes() == b"keep me"


async def test_backend_failure_reports_stderr_and_leaves_nothing(env, fox):
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    result = await edit(env, image="media/animals/fox.png", prompt="FAIL", path="animals/b.png", count=2)
    assert result.to_dict() == {"status": "error", "error": "editimage failed: edit exploded: out of memory"}
    assert files_under(env.vault.media) == {"animals/fox.png"}


async def test_timeout_kills_the_program_and_removes_the_partial_file(env, fox, tmp_path):
    profiles.set_field(env.profile, "image_command", EDIT_COMMAND)
    profiles.set_field(env.profile, "image_timeout_s", "1")
    result = await edit(env, image="media/animals/fox.png", prompt="HANG", path="animals/b.png")
    assert result.to_dict() == {"status": "error", "error": "editimage timed out after 1s"}
    (run,) = program_runs(tmp_path)
    assert Path(run["output"]).name.startswith(".partial-")  # it wrote there before it hung
    assert files_under(env.vault.media) == {"animals/fox.png"}  # and the partial file is gone
    assert not Path(run["input"]).exists()


async def test_a_source_that_is_not_a_picture(env):
    (env.vault.media / "fake.png").write_bytes(b"not a picture")
    result = await edit(env, image="media/fake.png", prompt="bluer", path="b.png")
    assert result.error.startswith("media/fake.png is not a picture that can be edited")


def test_schema_is_fully_typed():
    schema = EditImageTool().schema()["function"]
    assert set(schema["parameters"]["properties"]) == {"image", "prompt", "path", "mask", "count", "reason"}
    for name, spec in schema["parameters"]["properties"].items():
        assert spec["type"] and spec["description"], name
    assert schema["parameters"]["required"] == ["image", "prompt", "path", "reason"]
    assert EditImageTool.role == "image_tool" and EditImageTool.vision_followup


def test_the_shell_runs_it(env, fox, tmp_path):
    import subprocess
    import sys

    use_images_api(env)
    arguments = {"image": "media/animals/fox.png", "prompt": "bluer", "path": "animals/cli.png", "reason": "t"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui_agent",
            "tool",
            "edit_image",
            json.dumps(arguments),
            "--vault",
            str(env.vault.root),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["paths"] == ["media/animals/cli.png"]
    assert env.fake.edit_requests[0].files["image"].data == FOX


def test_the_card_and_the_carousel_read_an_edit_result():
    from tui_agent.ui.tool_failures import card_text, outcome

    def ok(source: object) -> str:
        return json.dumps({"status": "ok", "data": {"paths": ["media/b.png"], "source": source}})

    assert outcome(ok("media/animals/fox.png")).source == "media/animals/fox.png"
    for hostile in ("/etc/passwd", "media/../agent.db", "media\\..\\x.png", "media/a\x00.png", 7, "agent.db"):
        assert outcome(ok(hostile)).source == "", hostile  # never a page outside media/
    card = card_text("edit_image", "not found: media/animals/fox.png")
    assert card.splitlines()[0] == "✗ edit_image: That picture is not in the vault"
    card = card_text("edit_image", "flux2 cannot edit pictures: image_command has no {input} placeholder (...)")
    assert card.splitlines()[0] == "✗ edit_image: This image backend cannot edit pictures"


async def test_a_missing_program(env, fox):
    profiles.set_field(env.profile, "image_command", '["nope-editor", "--input", "{input}", "{prompt}", "{output}"]')
    result = await edit(env, image="media/animals/fox.png", prompt="bluer", path="animals/b.png")
    assert result.to_dict() == {"status": "error", "error": "nope-editor not found"}
    assert files_under(env.vault.media) == {"animals/fox.png"}
