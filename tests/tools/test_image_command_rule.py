"""image_command can never run the prompt as code (issue 26 item 3).

Every form the attack review ran a prompt with is refused when the profile is set, and never runs
when it is already stored (a row from before the rule, an imported vault): the marker file it would
create stays absent. The prompt reaches the program only as one whole argument, a private file or
stdin, verbatim.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tui_agent.core import profiles
from tui_agent.core.store.models import Profile
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.command_guard import template_reason
from tui_agent.core.tools.registry import default_registry


async def generate(env, prompt: str, path: str = "g/x.png"):
    ctx = ToolContext(env.vault, env.reload_profile())
    arguments = {"prompt": prompt, "path": path, "reason": "test", "count": 1}
    return await default_registry().execute("generate_image", arguments, ctx)


def store_unchecked(env, template: list[str]) -> None:
    """The template as a row written before the rule existed (no validation)."""
    Profile.update(image_command=json.dumps(template)).where(Profile.id == env.profile.id).execute()


def attacks(marker: Path, scratch: Path) -> list[tuple[str, list[str], str]]:
    """(label, template, prompt): each ran the prompt as code under the old denylist."""
    text = scratch / "input.txt"
    text.write_text("one line\n")
    m = str(marker)
    return [
        ("python3 -Ic", ["python3", "-Ic", "{prompt}", "{output}"], f"open({m!r}, 'w')"),
        ("python3 -Sc", ["python3", "-Sc", "{prompt}", "{output}"], f"open({m!r}, 'w')"),
        ("env -S", ["env", "-S", "{prompt}", "{output}"], f"touch {m}"),
        ("rbash -c", ["rbash", "-c", "{prompt}", "{output}"], f"touch {m}"),
        ("script -qc", ["script", "-qc", "{prompt}", "{output}"], f"touch {m}"),
        ("awk PROG", ["awk", "{prompt}", "{output}"], f'BEGIN {{ system("touch {m}") }}'),
        ("perl -ne", ["perl", "-ne", "{prompt}", "{output}"], f"BEGIN {{ system('touch {m}') }}"),
        ("node -p", ["node", "-p", "{prompt}", "{output}"], f"require('fs').writeFileSync({m!r}, '')"),
        ("xargs sh -c", ["xargs", "-a", "/dev/null", "sh", "-c", "{prompt}", "{output}"], f"touch {m}"),
        (
            "find -exec sh -c",
            ["find", str(scratch), "-maxdepth", "0", "-exec", "sh", "-c", "{prompt}", "{output}", ";"],
            f"touch {m}",
        ),
        ("sed 1e", ["sed", "{prompt}", str(text), "{output}"], f"1e touch {m}"),
        ("python3 SCRIPT", ["python3", "-", "{output}"], f"open({m!r}, 'w')"),  # the prompt on stdin
        ("uv run python -c", ["uv", "run", "python", "-c", "{prompt}", "{output}"], f"open({m!r}, 'w')"),
    ]


@pytest.fixture
def attack_list(tmp_path):
    marker = tmp_path / "ran-as-code"
    return marker, attacks(marker, tmp_path)


def test_every_attack_form_is_refused_when_the_profile_is_set(env, attack_list):
    _, forms = attack_list
    before = env.reload_profile().image_command
    for label, template, _ in forms:
        with pytest.raises(profiles.ProfileError) as caught:
            profiles.set_field(env.profile, "image_command", json.dumps(template))
        message = str(caught.value)
        assert message.startswith("image_command: must run the image program directly, not a shell"), label
        assert "the prompt would run as code" in message, label
        assert env.reload_profile().image_command == before, label


@pytest.mark.slow
def test_every_attack_form_is_refused_by_tui_agent_profile_set(attack_list, tmp_path):
    import subprocess
    import sys

    _, forms = attack_list
    vault = str(tmp_path / "cli-vault")
    for label, template, _ in forms:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tui_agent",
                "--vault",
                vault,
                "profile",
                "set",
                "image_command",
                json.dumps(template),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, label
        assert result.stderr.startswith("error: image_command: must run the image program directly, not a shell")
        assert result.stderr.count("\n") == 1 and "the prompt would run as code" in result.stderr, label
    shown = subprocess.run(
        [sys.executable, "-m", "tui_agent", "--vault", vault, "profile", "show"], capture_output=True, text=True
    )
    assert 'image_command: ["flux2", "{prompt}", "{output}"]' in shown.stdout


async def test_every_attack_form_stored_anyway_never_runs(env, attack_list, tmp_path):
    marker, forms = attack_list
    for label, template, prompt in forms:
        store_unchecked(env, template)
        result = await generate(env, prompt, path=f"a/{len(label)}-{abs(hash(label))}.png")
        assert result.status == "error", label
        assert result.error.startswith("profile field image_command must run the image program directly"), (
            label,
            result.error,
        )
        assert not marker.exists(), label
    assert not (env.vault.media / "a").exists()


@pytest.mark.parametrize(
    "template",
    [
        ["flux2", "--prompt={prompt}", "{output}"],
        ["flux2", "{prompt} {output}"],
        ["flux2", "print({prompt})", "{output}"],
        ["flux2", "@{prompt}", "{output}"],
    ],
)
async def test_the_prompt_only_as_a_whole_argument(env, template, tmp_path):
    with pytest.raises(profiles.ProfileError) as caught:
        profiles.set_field(env.profile, "image_command", json.dumps(template))
    assert str(caught.value).startswith("image_command: must pass {prompt} as a whole argument of its own")
    store_unchecked(env, template)
    result = await generate(env, "a cat")
    assert result.error.startswith("profile field image_command must pass {prompt} as a whole argument")
    assert not (tmp_path / "flux2.log").exists()


@pytest.mark.parametrize(
    "template",
    [
        ["flux2", "{prompt}", "{output}"],
        ["flux2", "--model", "{model}", "--prompt", "{prompt}", "--out={output}"],
        ["/opt/shiny/bin/shiny", "-o", "{output}", "--", "{prompt}"],
        ["promptimage", "--prompt-file", "{prompt_file}", "{output}"],
        ["promptimage", "{output}"],
        ["flux2", "--lang", "es", "--channel", "r", "{prompt}", "{output}"],  # ordinary words after the first
    ],
)
def test_templates_that_run_an_image_program_directly_are_accepted(template):
    assert template_reason(template) is None
    assert json.loads(profiles.parse_field("image_command", json.dumps(template))) == template


HOSTILE = ["$(touch {m})", "; touch {m}", "`touch {m}`", "a cat' ; touch {m} ; echo '", 'x" && touch {m} && "']


@pytest.mark.slow
async def test_hostile_prompts_arrive_as_text_through_the_default_template(env, tmp_path):
    marker = tmp_path / "ran"
    assert json.loads(env.reload_profile().image_command) == ["flux2", "{prompt}", "{output}"]
    for number, pattern in enumerate(HOSTILE):
        prompt = pattern.format(m=marker)
        result = await generate(env, prompt, path=f"h/{number}.png")
        assert result.status == "ok", result.error
        assert not marker.exists()
        last = (tmp_path / "flux2.log").read_text().splitlines()[-1]
        assert last.endswith(f" {prompt} {env.vault.media}/h/" + last.rsplit("/", 1)[-1])


@pytest.mark.parametrize("channel", ["file", "stdin"])
async def test_the_prompt_through_a_file_or_stdin_arrives_verbatim(env, tmp_path, channel):
    marker = tmp_path / "ran"
    template = (
        ["promptimage", "--prompt-file", "{prompt_file}", "{output}"]
        if channel == "file"
        else ["promptimage", "{output}"]
    )
    profiles.set_field(env.profile, "image_command", json.dumps(template))
    prompt = f"-- a cat\n$(touch {marker}); {{output}} ünïcode"  # even a leading '-' is fine here
    result = await generate(env, prompt, path=f"{channel}/cat.png")
    assert result.status == "ok", result.error
    record = json.loads((tmp_path / "flux2.log").read_text().splitlines()[-1])
    assert record["from"] == channel and record["prompt"] == prompt.strip()
    assert not marker.exists()
    if channel == "file":
        assert record["mode"] == "0o600"
        assert not Path(record["path"]).exists()  # removed after the run


async def test_a_link_to_an_interpreter_is_refused_at_run_time(env, tmp_path):
    import shutil

    python = shutil.which("python3")
    assert python is not None
    link = tmp_path / "bin" / "flux-fast"
    link.parent.mkdir()
    os.symlink(os.path.realpath(python), link)
    marker = tmp_path / "ran"
    profiles.set_field(env.profile, "image_command", json.dumps([str(link), "{prompt}", "{output}"]))
    result = await generate(env, f"open({str(marker)!r}, 'w')")  # a file name python would run
    assert result.status == "error"
    assert result.error.startswith("profile field image_command must run the image program directly, not a program")
    assert not marker.exists()
