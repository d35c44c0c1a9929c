"""Global options wherever argparse takes them (issue 25 item 4), and values that must be refused
(issue 26 item 8: a port out of range, a base_url with a space). All through the real console script."""

from __future__ import annotations

import subprocess

import pytest
from cli_fork import tui_agent_argv
from fake_openai import FakeOpenAI

from tui_agent.core import profiles


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def field(vault, profile: str, name: str) -> str:
    result = cli("--vault", str(vault), "profile", "show", profile)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    return lines[name]


@pytest.mark.slow
def test_profile_before_the_subcommand_chooses_the_profile_set_changes(tmp_path):
    vault = tmp_path / "v"
    assert cli("--vault", str(vault), "profile", "create", "other").returncode == 0
    result = cli("--profile", "other", "--vault", str(vault), "profile", "set", "chat_model", "before-sub")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "other.chat_model = before-sub"
    assert field(vault, "other", "chat_model") == "before-sub"
    assert field(vault, "default", "chat_model") != "before-sub"
    # After the subcommand, as before; and `profile show` follows the global option too.
    result = cli("--vault", str(vault), "profile", "set", "--profile", "other", "vision_model", "after-sub")
    assert result.returncode == 0, result.stderr
    assert field(vault, "other", "vision_model") == "after-sub"
    result = cli("--profile", "other", "--vault", str(vault), "profile", "show")
    assert result.stdout.splitlines()[0] == "name: other"
    # A profile that does not exist is an error, never a silent fallback to the active one.
    result = cli("--profile", "nope", "--vault", str(vault), "profile", "set", "chat_model", "x")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: profile: no profile named 'nope' (profiles: default, other)"
    assert field(vault, "default", "chat_model") != "x"


@pytest.mark.slow
def test_profile_and_vault_before_ask_go_to_that_profiles_endpoint(env, tmp_path):
    other = FakeOpenAI().start()
    try:
        values = {name: getattr(env.profile, name) for name in profiles.FIELD_NAMES}
        profiles.create_profile("other", {**values, "base_url": other.base_url})
        result = cli("--profile", "other", "--vault", str(env.vault.root), "ask", "--new", "hi")
        assert result.returncode == 0, result.stderr
        assert len(other.chat_requests) == 1 and other.chat_requests[0]["messages"][-1]["content"] == "hi"
        assert env.fake.chat_requests == []
        # The option after the subcommand still wins over the one before it.
        result = cli("--profile", "other", "--vault", str(env.vault.root), "ask", "--profile", "test", "--new", "yo")
        assert result.returncode == 0, result.stderr
        assert len(env.fake.chat_requests) == 1 and len(other.chat_requests) == 1
    finally:
        other.stop()


@pytest.mark.slow
def test_serve_refuses_a_port_out_of_range(tmp_path):
    for port in ("99999", "-1", "http"):
        result = cli("--vault", str(tmp_path / "v"), "serve", "--port", port, timeout=30)
        assert result.returncode == 2
        assert "argument --port: must be a port number (0-65535)" in result.stderr.splitlines()[-1]
        assert "serving" not in result.stdout


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://a b/", "must not contain spaces or control characters"),
        ("http://a\tb/v1", "must not contain spaces or control characters"),
        ("http://host\x1b[31m/v1", "must not contain spaces or control characters"),
        ("http://127.0.0.1:99999/v1", "has an invalid port (0-65535)"),
        ("http://:80/v1", "must name a host"),
    ],
)
def test_base_url_with_a_space_or_a_bad_port_is_refused(env, url, reason):
    before = env.reload_profile().base_url
    with pytest.raises(profiles.ProfileError) as caught:
        profiles.set_field(env.profile, "base_url", url)
    assert str(caught.value).startswith(f"base_url: {reason}")
    assert env.reload_profile().base_url == before


@pytest.mark.parametrize(
    "url", ["http://localhost:11434/v1", "https://api.openai.com/v1", "http://[::1]:8080/v1", "http://bücher.de/v1"]
)
def test_ordinary_base_urls_are_accepted(env, url):
    profiles.set_field(env.profile, "base_url", url)
    assert env.reload_profile().base_url == url


@pytest.mark.slow
def test_profile_set_base_url_with_a_space_fails_through_the_cli(tmp_path):
    vault = str(tmp_path / "v")
    result = cli("--vault", vault, "profile", "set", "base_url", "http://a b/")
    assert result.returncode == 2
    assert result.stderr == "error: base_url: must not contain spaces or control characters, got 'http://a b/'\n"
    assert field(tmp_path / "v", "default", "base_url") == "http://localhost:11434/v1"
