"""generate_image with a real flux2 subprocess (tests/bin/flux2) and the openai images backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_openai import Reply
from pilot_helpers import until
from repo_paths import TESTS

from tui_agent.core import profiles
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.generate_image import GenerateImageTool
from tui_agent.core.tools.registry import default_registry


async def generate(env, **arguments):
    ctx = ToolContext(env.vault, env.reload_profile())
    arguments.setdefault("reason", "test")
    return await default_registry().execute("generate_image", arguments, ctx)


def flux_runs(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "flux2.log"
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


async def test_success_writes_a_real_png_and_logs_model_and_endpoint(env, tmp_path):
    result = await generate(env, prompt="a red fox", path="animals/fox.png", count=1)
    assert result.to_dict() == {
        "status": "ok",
        "data": {"paths": ["media/animals/fox.png"], "prompt": "a red fox", "model": "flux2-test", "count": 1},
    }
    assert (env.vault.media / "animals/fox.png").read_bytes().startswith(b"\x89PNG")
    log_text = env.vault.log_file.read_text()
    flux = str(TESTS / "bin" / "flux2")
    assert f"[IMAGE TOOL]\nSelected model: flux2-test\nEndpoint: {flux}\n" in log_text
    assert not any(".partial" in name for name in files_under(env.vault.media))


async def test_count_defaults_to_the_profile_and_names_files(env):
    result = await generate(env, prompt="two cats", path="cats/cat.png")
    assert result.data["paths"] == ["media/cats/cat-1.png", "media/cats/cat-2.png"]
    profiles.set_field(env.profile, "images_per_request", "3")
    result = await generate(env, prompt="three dogs", path="dogs/dog.png")
    assert len(result.data["paths"]) == 3


async def test_count_is_capped_at_four_with_a_warning_and_two_run_at_once(env, tmp_path):
    result = await generate(env, prompt="SLOW stars", path="sky/star.png", count=9)
    assert result.is_ok, result.error
    assert result.data["warning"] == "count 9 capped at 4"
    assert len(result.data["paths"]) == 4
    events = sorted((float(r[2]), 1 if r[0] == "start" else -1) for r in flux_runs(tmp_path))
    running, peak = 0, 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 2


async def test_failure_reports_stderr_and_leaves_nothing(env):
    result = await generate(env, prompt="FAIL please", path="x/fail.png", count=1)
    assert result.to_dict() == {"status": "error", "error": "flux2 failed: model exploded: out of memory"}
    assert files_under(env.vault.media) == set()


async def test_one_failure_in_a_batch_removes_the_whole_batch(env):
    result = await generate(env, prompt="NOFILE", path="batch/b.png", count=2)
    assert result.error == "flux2 failed: it exited without writing the image"
    assert files_under(env.vault.media) == set()


async def test_garbage_output_is_not_an_image(env):
    result = await generate(env, prompt="GARBAGE", path="junk.png", count=1)
    assert result.error.startswith("flux2 failed: output is not a valid PNG")
    assert not (env.vault.media / "junk.png").exists()


async def test_timeout_kills_the_process_group_and_leaves_no_file(env, tmp_path):
    profiles.set_field(env.profile, "image_timeout_s", "1")
    result = await generate(env, prompt="HANG forever", path="slow/hang.png", count=1)
    assert result.to_dict() == {"status": "error", "error": "flux2 timed out after 1s"}
    # Killed, not waited for: the run (it sleeps 60 s) started and never reached its end.
    assert [run[0] for run in flux_runs(tmp_path)] == ["start"]
    pid = int(flux_runs(tmp_path)[0][1])

    def gone() -> bool:  # a killed process ends a moment later: later on a loaded machine
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await until(None, gone, what="the killed flux2 run never ended")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert files_under(env.vault.media) == set()


async def test_missing_binary(env, monkeypatch):
    profiles.set_field(env.profile, "image_command", '["flux2-not-installed", "{prompt}", "{output}"]')
    result = await generate(env, prompt="x", path="a.png", count=1)
    assert result.to_dict() == {"status": "error", "error": "flux2-not-installed not found"}
    profiles.set_field(env.profile, "image_command", '["flux2", "{prompt}", "{output}"]')
    monkeypatch.setenv("PATH", "/nonexistent")
    result = await generate(env, prompt="x", path="a.png", count=1)
    assert result.error == "flux2 not found"


async def test_existing_path_is_an_error_and_the_generator_never_starts(env, tmp_path):
    (env.vault.media / "food").mkdir()
    (env.vault.media / "food/pizza.png").write_bytes(b"keep me")
    result = await generate(env, prompt="pizza", path="food/pizza.png", count=1)
    assert result.to_dict() == {"status": "error", "error": "exists: media/food/pizza.png"}
    (env.vault.media / "food/pie-2.png").write_bytes(b"keep me too")
    result = await generate(env, prompt="pie", path="food/pie.png", count=3)
    assert result.error == "exists: media/food/pie-2.png"
    assert flux_runs(tmp_path) == []
    assert (env.vault.media / "food/pizza.png").read_bytes() == b"keep me"
    assert not (env.vault.media / "food/pie-1.png").exists()


HOSTILE_PATHS = [
    "../escape.png",
    "a/../../escape.png",
    "/etc/escape.png",
    "/tmp/escape.png",
    "a\\..\\escape.png",
    "..\\escape.png",
    "a\x00.png",
    "escape.png\x00.txt",
    "%2e%2e/escape.png",
    "%2e%2e%2fescape.png",
    "..%2fescape.png",
    "․․/escape.png",  # one-dot leaders
    "．．/escape.png",  # fullwidth dots
    "ａ.png",  # fullwidth letter
    "a/．./b.png",
    "~/escape.png",
    "$HOME/escape.png",
    "a b.png",
    ".hidden.png",
    "-rf.png",
    "escape.PNG",
    "escape.png.sh",
    "escape.png\n",
    "escape",
    "",
    "media/../../escape.png",
    "a//b.png",
    "dir/.png",
    "C:/escape.png",
    "link/escape.png",  # link is a symlink to a folder outside media/
    "link/deeper/escape.png",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
async def test_hostile_paths_create_nothing_outside_media(env, tmp_path, path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (env.vault.media / "link").symlink_to(outside, target_is_directory=True)
    before_vault = files_under(env.vault.root)
    result = await generate(env, prompt="x", path=path, count=1)
    assert result.status == "error"
    assert result.error.startswith("invalid path: must be relative, alphanumeric/dashes/underscores, end with .png")
    assert files_under(outside) == set()
    assert files_under(env.vault.root) == before_vault
    assert not (tmp_path / "escape.png").exists()
    assert flux_runs(tmp_path) == []


async def test_openai_images_backend(env, monkeypatch):
    profiles.set_field(env.profile, "image_backend", "openai")
    profiles.set_field(env.profile, "image_model", "img-model")
    result = await generate(env, prompt="a lighthouse", path="sea/lighthouse.png", count=2)
    assert result.is_ok, result.error
    assert [r["model"] for r in env.fake.image_requests] == ["img-model", "img-model"]
    assert env.fake.image_requests[0]["response_format"] == "b64_json"
    assert (env.vault.media / "sea/lighthouse-2.png").read_bytes().startswith(b"\x89PNG")
    assert f"Endpoint: {env.fake.base_url}/images/generations" in env.vault.log_file.read_text()
    env.fake.image_replies.append(Reply(status=400, error_message="Your request was rejected by our content policy"))
    result = await generate(env, prompt="bad", path="sea/bad.png", count=1)
    assert result.error == "the image service refused this prompt (content policy); try a different description"
    profiles.set_field(env.profile, "image_base_url", "http://127.0.0.1:9/v1")
    result = await generate(env, prompt="x", path="sea/down.png", count=1)
    assert result.error.startswith("images API unreachable at http://127.0.0.1:9/v1/images/generations")
    assert not (env.vault.media / "sea/down.png").exists()


@pytest.mark.parametrize("kind", ["jpeg", "webp"])
async def test_an_images_api_answering_jpeg_or_webp_is_kept_as_the_png_it_was_asked_for(env, kind):
    """gpt-image models answer JPEG or WebP when asked to (output_format): the picture is kept, as a PNG
    of the same pixels under the .png name the model gave (it was refused as "not a valid PNG")."""
    from PIL import Image

    profiles.set_field(env.profile, "image_backend", "openai")
    env.fake.image_format = kind
    result = await generate(env, prompt="a lighthouse", path="sea/lighthouse.png", count=1)
    assert result.is_ok, result.error
    path = env.vault.media / "sea/lighthouse.png"
    assert path.read_bytes().startswith(b"\x89PNG")
    with Image.open(path) as image:
        assert (image.format, image.size) == ("PNG", (16, 12))
        red, green, blue = image.convert("RGB").getpixel((8, 6))
        assert red > 150 and green < 80 and blue < 80  # png_bytes' red, through the lossy encoding


def test_schema_is_fully_typed():
    schema = GenerateImageTool().schema()["function"]
    for name, spec in schema["parameters"]["properties"].items():
        assert spec["type"] and spec["description"], name
    assert schema["parameters"]["required"] == ["prompt", "path", "reason"]
