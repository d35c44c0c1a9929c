"""`db use` keeps no credential, however the URL carries it; `db show` never prints one (issue 34 item 4)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from cli_fork import tui_agent_argv

from tui_agent.core.store import location

SECRET = "hunter2-in-the-query"
CARRIERS = [
    f"postgresql://ann@127.0.0.1:9/agent?password={SECRET}",
    f"postgresql://ann@127.0.0.1:9/agent?sslmode=disable&password={SECRET}",
    f"postgresql://ann@127.0.0.1:9/agent?PASSWORD={SECRET}",
    f"postgresql://ann@127.0.0.1:9/agent?passfile=/home/ann/{SECRET}",
    f"postgresql://ann@127.0.0.1:9/agent?sslpassword={SECRET}",
]


def cli(vault, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tui_agent_argv(), "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("url", CARRIERS)
def test_db_use_refuses_a_credential_in_the_query_and_writes_nothing(tmp_path, url):
    vault = tmp_path / "vault"
    result = cli(vault, "db", "use", url)
    assert result.returncode == 1
    assert result.stderr.startswith("error: the URL ") and result.stderr.count("\n") == 1
    assert SECRET not in result.stderr
    assert not (vault / location.LOCAL_SETTINGS).exists()


@pytest.mark.parametrize("url", CARRIERS)
def test_db_show_never_prints_one(tmp_path, url):
    vault = tmp_path / "vault"
    vault.mkdir()
    result = cli(vault, "db", "show", TUI_AGENT_DB=url)
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "store:  postgresql://ann@127.0.0.1:9/agent" in result.stdout
    # A file an earlier version wrote with the password in it: shown without it too.
    (vault / location.LOCAL_SETTINGS).write_text(json.dumps({"db": url}))
    result = cli(vault, "db", "show")
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr


def test_the_credential_still_reaches_libpq_and_a_variable_is_kept():
    url = location.parse(f"postgresql://ann@h/agent?sslmode=require&password={SECRET}&sslpassword=k")
    assert url.text == "postgresql://ann@h/agent?sslmode=require"
    assert url.connect_args()["password"] == SECRET and url.connect_args()["sslpassword"] == "k"
    named = location.parse("postgresql://ann@h/agent?password=${TEAM_DB_PASSWORD}")
    assert named.password_variable == "TEAM_DB_PASSWORD" and named.password == ""
    assert named.text == "postgresql://ann@h/agent?password=${TEAM_DB_PASSWORD}"
