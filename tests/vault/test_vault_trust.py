"""A jj_vault that came with a cloned folder runs nothing and sends no key until trusted (issue 26 item 1).

The cloned vault's profile names an API key variable, an image command that leaves a marker file
and an MCP server (the real fixture server) that records each start. Until the user trusts the
vault (``tui-agent vault trust``, remembered in their own config folder), none of it runs and the
fake model server never sees the key; afterwards all of it does.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv
from fake_openai import FakeOpenAI, Reply
from mcp_helpers import FIXTURE

from tui_agent.core import profiles, trust
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store import open_database
from tui_agent.core.vault import Vault

SECRET = "sk-cloned-secret-123"


class Clone:
    def __init__(self, tmp_path: Path, fake: FakeOpenAI) -> None:
        self.repo = tmp_path / "repo"
        self.vault = self.repo / "jj_vault"
        self.config = tmp_path / "config"
        self.image_marker = tmp_path / "image-command-ran"
        self.mcp_marker = tmp_path / "mcp-server-started"
        self.fake = fake
        self.env = {
            **os.environ,
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "CLONED_KEY": SECRET,
        }
        self.env.pop("TUI_AGENT_VAULT", None)

    def build(self) -> Clone:
        """The folder as it would arrive from `git clone`: its vault and a generator script."""
        tools = self.repo / "tools"
        tools.mkdir(parents=True)
        generator = tools / "gen"
        generator.write_text(
            f"#!{sys.executable}\n"
            "import sys\n"
            f"open({str(self.image_marker)!r}, 'a').write('ran\\n')\n"
            "from PIL import Image\n"
            "Image.new('RGB', (8, 8), (1, 2, 3)).save(sys.argv[2], 'PNG')\n"
        )
        generator.chmod(0o755)
        vault = Vault(self.vault).init()
        db = open_database(vault.db_path)
        # Its settings were made (so approved) on this machine, in the config the commands use: what
        # is tested here is the trust of the folder (the settings' approval: test_approvals.py).
        config_before = os.environ.get("XDG_CONFIG_HOME")
        os.environ["XDG_CONFIG_HOME"] = str(self.config)
        try:
            profile = profiles.create_profile(
                "cloned",
                {
                    "base_url": self.fake.base_url,
                    "api_key_env": "CLONED_KEY",
                    "chat_model": "chat-model",
                    "vision_model": "vision-model",
                    "image_model": "flux2",
                    "request_timeout_s": 10,
                },
            )
            profiles.use_profile("cloned")
            profiles.set_field(profile, "image_command", json.dumps([str(generator), "{prompt}", "{output}"]))
            mcp_config.add_server(
                mcp_config.ServerConfig(
                    name="cloned",
                    transport="stdio",
                    command=sys.executable,
                    args=[str(FIXTURE), "stdio"],
                    env={"FIXTURE_MCP_PIDS": str(self.mcp_marker)},
                    policy="auto",
                )
            )
        finally:
            db.close()
            if config_before is None:
                os.environ.pop("XDG_CONFIG_HOME", None)
            else:
                os.environ["XDG_CONFIG_HOME"] = config_before
        return self

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*tui_agent_argv(), *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )

    def keys_sent(self) -> list[str]:
        """Every header (any name, any case) of any request that carries the key."""
        return [f"{k}: {v}" for h in self.fake.headers for k, v in h.items() if SECRET in v]

    def nothing_ran(self) -> None:
        assert not self.image_marker.exists()
        assert not self.mcp_marker.exists()
        assert self.keys_sent() == []


@pytest.fixture
def clone(tmp_path, fake_llm):
    yield Clone(tmp_path, fake_llm).build()
    trust.set_current(Path("/"), trusted=True)  # this process's state back as the other tests expect


IMAGE_CALL = json.dumps({"prompt": "a boat", "path": "boats/b.png", "count": 1, "reason": "r"})


@pytest.mark.slow
def test_a_cloned_vault_runs_nothing_and_sends_no_key_until_trusted(clone):
    refusal = (
        f"error: the vault {clone.vault} came with the current folder and is not trusted (it could start "
        f"programs and use your API key): trust it with `tui-agent vault trust {clone.vault}`, or name it with --vault\n"
    )
    # ask without a terminal: one line, before anything starts.
    result = clone.cli("ask", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", refusal)
    result = clone.cli("ask", "-", stdin="hi from a pipe")
    assert (result.returncode, result.stderr) == (1, refusal)
    for command in (["mcp", "test", "cloned"], ["serve", "--port", "0"]):
        result = clone.cli(*command)
        assert (result.returncode, result.stderr) == (1, refusal), command
    # tool runs, but the image command does not.
    result = clone.cli("tool", "generate_image", IMAGE_CALL)
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"] == (
        f"the image command is not run: the vault {clone.vault} came with the current folder and is not "
        f"trusted; trust it with `tui-agent vault trust {clone.vault}` (or name it with --vault)"
    )
    # Reading it is fine.
    assert clone.cli("profile", "show").stdout.splitlines()[0] == "name: cloned"
    result = clone.cli("vault", "status")
    assert (
        result.stdout
        == f"{clone.vault}: not trusted: it runs no program and sends no API key (it came with the current folder)\n"
    )
    clone.nothing_ran()
    assert clone.fake.requests == [] and clone.fake.headers == []

    # Trusted once: remembered in the user's own config folder, private, written whole.
    result = clone.cli("vault", "trust")
    assert result.returncode == 0, result.stderr
    stored = clone.config / "tui-agent" / "trusted-vaults.json"
    assert json.loads(stored.read_text()) == {"version": 1, "trusted": [str(clone.vault.resolve())]}
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    names = sorted(p.name for p in stored.parent.iterdir() if not p.name.startswith("."))
    assert names == ["approved-settings.json", "trusted-vaults.json"]  # the settings' approvals are beside it
    clone.nothing_ran()

    clone.fake.script(Reply(tool_calls=[("generate_image", IMAGE_CALL)]), Reply(text="A boat."))
    result = clone.cli("ask", "--yes", "draw a boat")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "A boat.\n"
    assert clone.image_marker.read_text() == "ran\n"
    assert clone.mcp_marker.exists()  # the MCP server started before the turn
    assert len(clone.keys_sent()) == 2  # both requests carried the key

    # Untrusted again: refused again.
    assert clone.cli("vault", "untrust").returncode == 0
    assert json.loads(stored.read_text())["trusted"] == []
    assert clone.cli("ask", "hi").stderr == refusal


@pytest.mark.slow
def test_trust_by_path_from_anywhere_also_by_the_project_folder(clone, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*tui_agent_argv(), *args], cwd=elsewhere, env=clone.env, capture_output=True, text=True)

    result = run("vault", "trust", str(clone.repo))  # the project folder: its jj_vault is meant
    assert result.stdout.startswith(f"trusted {clone.vault}:")
    assert run("vault", "status", str(clone.vault)).stdout.startswith(f"{clone.vault}: in your trust list")
    assert clone.cli("vault", "status").stdout.startswith(f"{clone.vault}: trusted (it came with the current folder)")
    assert run("vault", "untrust", str(clone.vault)).stdout == f"{clone.vault} is no longer trusted\n"
    assert run("vault", "status").stdout.endswith(": trusted (your own vault)\n")


@pytest.mark.slow
def test_the_same_vault_named_with_vault_is_trusted_and_other_folders_are_not(clone, tmp_path):
    clone.fake.script(Reply(text="hello"))
    result = clone.cli("--vault", "jj_vault", "ask", "hi")  # named: the user chose it
    assert result.returncode == 0, result.stderr
    assert clone.mcp_marker.exists() and len(clone.keys_sent()) == 1
    # Trust is per absolute path: a second copy of the same repository is not trusted.
    assert clone.cli("vault", "trust").returncode == 0
    copy = tmp_path / "copy"
    copy.mkdir()
    subprocess.run(["cp", "-a", str(clone.vault), str(copy / "jj_vault")], check=True)
    result = subprocess.run(
        [*tui_agent_argv(), "ask", "hi"],
        cwd=copy,
        env=clone.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and "is not trusted" in result.stderr
    assert str(copy / "jj_vault") in result.stderr


@pytest.mark.slow
def test_a_damaged_trust_list_trusts_nothing_and_is_not_overwritten(clone):
    stored = clone.config / "tui-agent" / "trusted-vaults.json"
    stored.parent.mkdir(parents=True, exist_ok=True)  # the build wrote its approvals there
    stored.write_text("{not json")
    result = clone.cli("ask", "hi")
    assert result.returncode == 1 and "is not trusted" in result.stderr
    result = clone.cli("vault", "trust")
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {stored} is not a trust list (") and result.stderr.count("\n") == 1
    assert stored.read_text() == "{not json"
    clone.nothing_ran()


def test_the_key_check_and_the_tools_ask_the_process_state(tmp_path, monkeypatch):
    """In-process: the untrusted state withholds the key and the image command, then lets them go."""
    from tui_agent.core.llm import LLMError, resolve_api_key

    monkeypatch.setenv("SOME_KEY", SECRET)
    profile = profiles.Profile(api_key_env="SOME_KEY")
    trust.set_current(tmp_path / "jj_vault", trusted=False)
    try:
        with pytest.raises(LLMError) as caught:
            resolve_api_key(profile)
        assert caught.value.kind == "untrusted"
        assert str(caught.value).startswith("the API key in $SOME_KEY is not read or sent: the vault ")
        assert SECRET not in str(caught.value)
    finally:
        trust.set_current(tmp_path / "jj_vault", trusted=True)
    from tui_agent.core import approvals

    approvals.approve([approvals.endpoint(profile.base_url, "SOME_KEY", "test")])  # and approved here
    assert resolve_api_key(profile) == SECRET


def ask_at_a_terminal(clone: Clone, answer: str, *args: str) -> tuple[int, str, str]:
    """``tui-agent ask`` with stdin and stderr on a pty (a terminal); ``answer`` typed at its question."""
    import pty
    import select
    import time

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*tui_agent_argv(), "ask", *args],
        cwd=clone.repo,
        env=clone.env,
        stdin=follower,
        stderr=follower,
        stdout=subprocess.PIPE,
        text=True,
    )
    os.close(follower)
    seen = b""
    answered = False
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the process closed the terminal: it ended
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"Trust it? [y/N] " in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if process.poll() is not None and not ready:
            break
    os.close(leader)
    stdout = process.stdout.read() if process.stdout else ""
    return process.wait(timeout=30), stdout, seen.decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.slow
def test_ask_at_a_terminal_asks_and_no_keeps_everything_off(clone):
    code, stdout, terminal = ask_at_a_terminal(clone, "n", "hi")
    assert f"The vault {clone.vault} came with the current folder." in terminal
    assert "not trusted: no MCP server, no image command, no API key this time" in terminal
    assert "MCP servers are not started: the vault" in terminal
    assert "error: the API key in $CLONED_KEY is not read or sent" in terminal
    assert code == 1 and stdout == ""
    clone.nothing_ran()
    assert clone.fake.requests == []
    assert not (clone.config / "tui-agent" / "trusted-vaults.json").exists()


@pytest.mark.slow
def test_ask_at_a_terminal_yes_trusts_for_good(clone):
    clone.fake.script(Reply(text="hello"))
    code, stdout, terminal = ask_at_a_terminal(clone, "y", "hi")
    assert code == 0, terminal
    assert stdout == "hello\n"
    assert f"trusted {clone.vault}" in terminal
    assert clone.mcp_marker.exists() and len(clone.keys_sent()) == 1
    assert json.loads((clone.config / "tui-agent" / "trusted-vaults.json").read_text())["trusted"] == [str(clone.vault)]
    assert clone.cli("ask", "again").returncode == 0  # no terminal now, and no question: trusted
