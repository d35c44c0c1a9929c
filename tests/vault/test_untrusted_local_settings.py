"""A cloned folder's jj_vault/local-settings.json is not used until the vault is trusted (issue 34
item 3): naming ``postgresql://victim:${VARIABLE}@host/x`` makes nothing connect there, so neither the
variable's value nor $PGPASSWORD leaves the machine. A listening socket proves no connection came."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv

SECRET = "the-variable-s-value-77"


class Listener:
    """A TCP port that records every connection made to it (and closes it at once)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def hostile(tmp_path: Path):
    listener = Listener()
    repo = tmp_path / "repo"
    vault = repo / "jj_vault"
    vault.mkdir(parents=True)
    url = f"postgresql://victim:${{ANY_VARIABLE}}@127.0.0.1:{listener.port}/x"
    (vault / "local-settings.json").write_text(json.dumps({"db": url}))
    env = {**os.environ, "ANY_VARIABLE": SECRET, "PGPASSWORD": SECRET, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("TUI_AGENT_VAULT", None)
    env.pop("TUI_AGENT_DB", None)
    yield repo, vault, env, listener
    listener.close()


def run(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tui_agent_argv(), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def test_an_untrusted_vault_s_local_settings_connect_nowhere(hostile):
    repo, vault, env, listener = hostile
    refusal = (
        f"error: the vault {vault} came with the current folder and is not trusted, so the store its "
        f"local-settings.json names is not used: trust it with `tui-agent vault trust {vault}`, or name it with --vault\n"
    )
    for command in (["history", "list"], ["profile", "show"], ["db", "show"], ["db", "setup"], []):
        result = run(repo, env, *command)
        assert (result.returncode, result.stderr) == (1, refusal), command
        assert SECRET not in result.stdout + result.stderr
    assert listener.connections == 0

    # Trusted: the settings are used (this is what the listener would have seen before the fix).
    assert run(repo, env, "vault", "trust").returncode == 0
    result = run(repo, env, "history", "list")
    assert result.returncode == 1
    assert listener.connections >= 1
