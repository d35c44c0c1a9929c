"""generate_image under attack: races on one path, option injection, shell templates, long names."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tui_agent.core import profiles
from tui_agent.core.store.models import Profile
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.command_guard import template_reason
from tui_agent.core.tools.registry import default_registry


async def generate(env, **arguments):
    ctx = ToolContext(env.vault, env.reload_profile())
    arguments.setdefault("reason", "test")
    arguments.setdefault("count", 1)
    return await default_registry().execute("generate_image", arguments, ctx)


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def is_png(path: Path) -> bool:
    with Image.open(path) as image:
        image.verify()
        return image.format == "PNG"


@pytest.fixture
def gate(tmp_path, monkeypatch):
    """Two flux2 runs wait for each other, so both pass the existence check before either finishes."""
    folder = tmp_path / "gate"
    folder.mkdir()
    monkeypatch.setenv("FLUX2_GATE", str(folder))
    monkeypatch.setenv("FLUX2_GATE_COUNT", "2")
    return folder


async def test_two_calls_to_one_path_in_a_round_one_wins_and_its_file_stays(env, gate):
    first, second = await asyncio.gather(
        generate(env, prompt="a red boat", path="race/boat.png"),
        generate(env, prompt="a blue boat", path="race/boat.png"),
    )
    assert len(list(gate.iterdir())) == 2  # both generations ran at the same time
    results = sorted([first, second], key=lambda r: r.status)
    assert [r.status for r in results] == ["error", "ok"]
    assert results[0].error == "exists: media/race/boat.png (another generation made it first)"
    assert results[1].data["paths"] == ["media/race/boat.png"]
    assert files_under(env.vault.media / "race") == {"boat.png"}  # no temp file left either
    assert is_png(env.vault.media / "race/boat.png")


def test_two_processes_on_one_path_one_ok_one_exists_and_the_file_stays(env, gate):
    argv = [
        sys.executable,
        "-m",
        "tui_agent",
        "tool",
        "--vault",
        str(env.vault.root),
        "generate_image",
        json.dumps({"prompt": "a fox", "path": "race/fox.png", "count": 1, "reason": "r"}),
    ]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [(p.wait(timeout=120), p.stdout.read() if p.stdout else "") for p in procs]
    assert len(list(gate.iterdir())) == 2
    outputs.sort()
    assert [code for code, _ in outputs] == [0, 1]
    assert json.loads(outputs[0][1])["data"]["paths"] == ["media/race/fox.png"]
    assert json.loads(outputs[1][1]) == {
        "status": "error",
        "error": "exists: media/race/fox.png (another generation made it first)",
    }
    assert files_under(env.vault.media / "race") == {"fox.png"}
    assert is_png(env.vault.media / "race/fox.png")


async def test_a_failed_batch_removes_only_its_own_files(env):
    # Image 2 of this batch already exists: nothing runs, and the stranger's file is untouched.
    (env.vault.media / "set").mkdir()
    (env.vault.media / "set/cat-2.png").write_bytes(b"not ours")
    result = await generate(env, prompt="cat", path="set/cat.png", count=3)
    assert result.error == "exists: media/set/cat-2.png"
    assert files_under(env.vault.media / "set") == {"cat-2.png"}
    assert (env.vault.media / "set/cat-2.png").read_bytes() == b"not ours"


def use_argimage(env, template: list[str]) -> None:
    profiles.set_field(env.profile, "image_command", json.dumps(template))


def argimage_runs(tmp_path: Path) -> list[dict]:
    log = tmp_path / "flux2.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_prompt_that_looks_like_an_option_is_refused(env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    use_argimage(env, ["argimage", "--output", "{output}", "{prompt}"])
    hostile = f"--output={outside}/pwned.png"
    result = await generate(env, prompt=hostile, path="p/ok.png")
    assert result.status == "error"
    assert result.error.startswith("the prompt must not start with '-' (the image program would read it as an option)")
    assert argimage_runs(tmp_path) == []  # nothing ran
    assert list(outside.iterdir()) == []
    assert not (env.vault.media / "p").exists()
    # The same template is otherwise fine.
    result = await generate(env, prompt="a green field", path="p/ok.png")
    assert result.status == "ok", result.error
    assert argimage_runs(tmp_path)[-1]["prompt"] == ["a green field"]


async def test_a_prompt_that_looks_like_an_option_passes_after_a_double_dash(env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    use_argimage(env, ["argimage", "--output", "{output}", "--", "{prompt}"])
    hostile = f"--output={outside}/pwned.png"
    result = await generate(env, prompt=hostile, path="p/dash.png")
    assert result.status == "ok", result.error
    assert list(outside.iterdir()) == []
    run = argimage_runs(tmp_path)[-1]
    assert run["prompt"] == [hostile]  # the program got it as text
    assert is_png(env.vault.media / "p/dash.png")


async def test_a_prompt_naming_a_placeholder_stays_text(env, tmp_path):
    use_argimage(env, ["argimage", "--output", "{output}", "{prompt}"])
    result = await generate(env, prompt="draw {output} and {model}", path="p/text.png")
    assert result.status == "ok", result.error
    assert argimage_runs(tmp_path)[-1]["prompt"] == ["draw {output} and {model}"]


SHELL_TEMPLATES = [
    ["sh", "-c", "flux2 {prompt} {output}"],
    ["bash", "-c", "flux2 '{prompt}' {output}"],
    ["/bin/sh", "-c", "flux2 {prompt} {output}"],
    ["/usr/bin/bash", "/opt/gen.sh", "{prompt}", "{output}"],
    ["env", "sh", "-c", "flux2 {prompt} {output}"],
    ["/usr/bin/env", "-i", "HOME=/tmp", "bash", "-c", "flux2 {prompt} {output}"],
    ["timeout", "60", "dash", "-c", "flux2 {prompt} {output}"],
    ["nice", "-n", "5", "zsh", "-c", "flux2 {prompt} {output}"],
    ["busybox", "sh", "-c", "flux2 {prompt} {output}"],
    ["python3", "-c", "import os; os.system('flux2 {prompt} {output}')"],
    ["/usr/bin/perl", "-e", "system('flux2 {prompt} {output}')"],
    ["node", "--eval", "require('child_process').execSync('flux2 {prompt} {output}')"],
    ["pwsh", "-Command", "flux2 {prompt} {output}"],
    # Launchers and interpreters with a plain program after them: the prompt rule is by the
    # template's shape now (issue 26 item 3), so no launcher or interpreter may come first at all.
    ["env", "FLUX_HOME=/opt/flux", "flux2", "{prompt}", "{output}"],
    ["timeout", "120", "flux2", "--model", "{model}", "{prompt}", "{output}"],
    ["python3", "/opt/gen.py", "--prompt={prompt}", "{output}"],
]


@pytest.mark.parametrize("template", SHELL_TEMPLATES, ids=lambda t: " ".join(t[:3]))
def test_templates_that_run_a_shell_are_refused(env, template):
    before = env.reload_profile().image_command
    with pytest.raises(profiles.ProfileError) as caught:
        profiles.set_field(env.profile, "image_command", json.dumps(template))
    assert str(caught.value).startswith("image_command: must ")
    assert "the prompt would run as code" in str(caught.value)
    assert env.reload_profile().image_command == before


@pytest.mark.parametrize(
    "template",
    [
        ["flux2", "{prompt}", "{output}"],
        ["flux2", "--model", "{model}", "{prompt}", "{output}"],
        ["/opt/gen.py", "--prompt", "{prompt}", "{output}"],
        ["/opt/shiny/bin/shiny", "-o", "{output}", "--", "{prompt}"],
    ],
)
def test_templates_that_run_a_program_directly_are_accepted(template):
    assert template_reason(template) is None
    assert json.loads(profiles.parse_field("image_command", json.dumps(template))) == template


async def test_a_shell_template_stored_before_the_rule_never_runs(env, tmp_path):
    marker = tmp_path / "ran"
    Profile.update(image_command=json.dumps(["sh", "-c", f"touch {marker}; flux2 {{prompt}} {{output}}"])).where(
        Profile.id == env.profile.id
    ).execute()
    result = await generate(env, prompt="x", path="s/x.png")
    assert result.error.startswith("profile field image_command must run the image program directly, not a shell")
    assert not marker.exists()
    assert not (env.vault.media / "s").exists()


async def test_a_file_name_over_255_bytes_is_an_invalid_path_and_creates_nothing(env, tmp_path):
    before = files_under(env.vault.root)
    for path in ("deep/er/" + "a" * 252 + ".png", "b" * 300 + "/x.png"):
        result = await generate(env, prompt="x", path=path)
        assert result.error == (
            "invalid path: must be relative, alphanumeric/dashes/underscores, end with .png "
            "(a name is longer than 255 bytes)"
        )
    # 253 + ".png" fits alone but not as name-1.png ... name-2.png.
    result = await generate(env, prompt="x", path="deep/" + "c" * 250 + ".png", count=2)
    assert result.error.startswith("invalid path: ") and "longer than 255 bytes" in result.error
    assert files_under(env.vault.root) == before
    assert not (tmp_path / "flux2.log").exists()


async def test_a_file_name_of_exactly_255_bytes_works(env):
    name = "d" * 251 + ".png"
    result = await generate(env, prompt="x", path=f"long/{name}")
    assert result.status == "ok", result.error
    assert files_under(env.vault.media / "long") == {name}
