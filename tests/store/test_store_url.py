"""Choosing the store by URL: parsing, the order of --db / $TUI_AGENT_DB / `db use` / the default,
and that no password in clear is ever written down."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_fork import tui_agent_argv

from tui_agent.core.store import location
from tui_agent.core.store.errors import StoreError


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tui_agent_argv(), *args], capture_output=True, text=True, timeout=60, env=env)


def test_sqlite_urls_name_a_file(tmp_path: Path):
    absolute = location.parse(f"sqlite:///{tmp_path}/a.db")
    assert absolute.kind == "sqlite" and absolute.path == tmp_path / "a.db"
    assert location.parse(absolute.text).path == absolute.path  # the text parses back to the same file
    relative = location.parse("sqlite:b.db", base=tmp_path)
    assert relative.path == tmp_path / "b.db"


def test_postgresql_urls_keep_no_password_in_their_text():
    url = location.parse("postgresql://ann:s3cret@db.example:6543/agent?sslmode=require")
    assert (url.kind, url.user, url.host, url.port, url.dbname) == ("postgresql", "ann", "db.example", 6543, "agent")
    assert "s3cret" not in url.text and "s3cret" not in url.where()
    assert url.connect_args()["password"] == "s3cret" and url.connect_args()["sslmode"] == "require"
    assert location.parse("postgres://h/agent").is_postgresql


def test_a_password_variable_is_read_when_connecting(monkeypatch: pytest.MonkeyPatch):
    url = location.parse("postgresql://ann:${TEAM_DB_PASSWORD}@db/agent")
    assert "${TEAM_DB_PASSWORD}" in url.text and not url.password
    with pytest.raises(StoreError, match=r"\$TEAM_DB_PASSWORD, which is not set"):
        url.connect_args()
    monkeypatch.setenv("TEAM_DB_PASSWORD", "from-env")
    assert url.connect_args()["password"] == "from-env"


@pytest.mark.parametrize(
    "text",
    ["", "agent.db", "mysql://x/y", "postgresql://host", "postgresql://host/", "postgresql://h:99x/db", "sqlite:"],
)
def test_what_is_not_a_store_url_is_refused_in_one_line(text: str):
    with pytest.raises(StoreError) as caught:
        location.parse(text)
    assert "\n" not in str(caught.value) and ("sqlite:" in str(caught.value) or "postgresql://" in str(caught.value))


def test_the_environment_wins_over_the_vault_which_wins_over_the_default(tmp_path: Path, monkeypatch):
    root = tmp_path / "vault"
    root.mkdir()
    assert location.resolve(root).path == root / "agent.db"
    location.remember(root, location.parse("postgresql://ann@db/agent"))
    assert location.resolve(root).dbname == "agent"
    assert (root / location.LOCAL_SETTINGS).stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv(location.DB_ENV, f"sqlite:///{tmp_path}/other.db")
    assert location.resolve(root).path == tmp_path / "other.db"
    monkeypatch.delenv(location.DB_ENV)
    location.remember(root, None)
    assert location.resolve(root).path == root / "agent.db"


def test_db_use_refuses_a_password_in_clear_and_writes_nothing(tmp_path: Path):
    vault = tmp_path / "vault"
    result = cli("--vault", str(vault), "db", "use", "postgresql://ann:s3cret@127.0.0.1:1/agent")
    assert result.returncode == 1 and "password in clear" in result.stderr
    assert not (vault / location.LOCAL_SETTINGS).exists()
    assert "s3cret" not in result.stderr


def test_db_use_of_an_unreachable_server_is_one_line_and_keeps_the_old_choice(tmp_path: Path):
    vault = tmp_path / "vault"
    result = cli("--vault", str(vault), "db", "use", "postgresql://ann@127.0.0.1:1/agent")
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "cannot reach PostgreSQL at ann@127.0.0.1:1/agent" in result.stderr
    assert location.remembered(vault) is None
    shown = cli("--vault", str(vault), "db", "show")
    assert "sqlite://" in shown.stdout and "the default" in shown.stdout


def test_a_bad_db_option_is_a_usage_error(tmp_path: Path):
    result = cli("--db", "agent.db", "--vault", str(tmp_path / "v"), "history", "list")
    assert result.returncode == 2 and "--db: not a store URL" in result.stderr


def test_db_option_after_the_subcommand_and_a_sqlite_url_elsewhere(tmp_path: Path):
    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere.db"
    environment = {k: v for k, v in os.environ.items() if k != location.DB_ENV}
    result = cli("history", "list", "--vault", str(vault), "--db", f"sqlite://{elsewhere}", env=environment)
    assert result.returncode == 0, result.stderr
    assert elsewhere.is_file() and not (vault / "agent.db").exists()
    result = cli("--vault", str(vault), "db", "use", f"sqlite://{elsewhere}", env=environment)
    assert result.returncode == 0, result.stderr
    assert json.loads((vault / location.LOCAL_SETTINGS).read_text())["db"] == f"sqlite://{elsewhere}"
    assert "db use" in cli("--vault", str(vault), "db", "show", env=environment).stdout


def test_a_store_error_never_writes_an_escape_sequence_to_stderr(tmp_path: Path):
    """The error names the store (and may quote the server's words): control characters shown."""
    result = cli(
        "--db", "postgresql://ann@127.0.0.1:1/x%1B]0;pwned%07", "--vault", str(tmp_path / "v"), "history", "list"
    )
    assert result.returncode == 1 and "cannot reach PostgreSQL" in result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "␛]0;pwned␇" in result.stderr
