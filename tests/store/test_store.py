"""Schema versions, migrations, FTS, vault resolution, profiles."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from tui_agent.core import profiles
from tui_agent.core.store import history, migrations, open_database
from tui_agent.core.vault import Vault, resolve_vault_path


def test_upgrade_from_version_1_keeps_data_and_indexes_it(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    assert migrations.migrate(conn, target=1) == 1
    now = "2025-01-01 00:00:00.000000"
    conn.execute(
        "INSERT INTO profiles(name, base_url, chat_model, vision_model, created_at, updated_at) VALUES ('old', 'http://x/v1', 'c', 'v', ?, ?)",
        (now, now),
    )
    conn.execute("INSERT INTO conversations(title, created_at, updated_at) VALUES ('t', ?, ?)", (now, now))
    conn.execute(
        "INSERT INTO messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'pelicans migrate south', ?)",
        (now,),
    )
    conn.commit()
    conn.close()

    db = open_database(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (migrations.LATEST,)
    assert conn.execute("SELECT request_timeout_s, context_budget_tokens FROM profiles").fetchone() == (60, 12000)
    assert history.search_messages("pelicans")[0][0] == 1
    message = history.add_message(1, "assistant", "zebras too")
    assert history.search_messages("zebras")[0][0] == message.id
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
    db.close()


def test_newer_database_is_refused(tmp_path):
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    conn.close()
    with pytest.raises(RuntimeError, match="newer than this tui-agent"):
        open_database(path)


def test_fts_follows_updates_and_deletes(env):
    conversation = history.new_conversation()
    message = history.add_message(conversation.id, "user", "the quick brown fox")
    message.content = "the slow green turtle"
    message.save()
    assert history.search_messages("fox") == []
    assert history.search_messages("turtle")[0][0] == message.id
    history.delete_conversation(conversation.id)
    assert history.search_messages("turtle") == []


def test_vault_resolution_order(tmp_path, monkeypatch):
    (tmp_path / "jj_vault").mkdir()
    assert resolve_vault_path(None, cwd=tmp_path) == (tmp_path / "jj_vault").resolve()
    monkeypatch.setenv("TUI_AGENT_VAULT", str(tmp_path / "from-env"))
    assert resolve_vault_path(None, cwd=tmp_path) == tmp_path / "from-env"
    assert resolve_vault_path(str(tmp_path / "cli"), cwd=tmp_path) == tmp_path / "cli"
    monkeypatch.delenv("TUI_AGENT_VAULT")
    assert resolve_vault_path(None, cwd=tmp_path / "jj_vault").name == "jj_vault"
    assert "tui-agent" in str(resolve_vault_path(None, cwd=tmp_path / "jj_vault"))
    vault = Vault(tmp_path / "new").init()
    assert vault.media.is_dir() and vault.uploads.is_dir() and vault.logs.is_dir()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("base_url", "localhost:11434", "base_url: must be an http(s) URL"),
        ("chat_model", "  ", "chat_model: must not be empty"),
        ("vision_model", "", "vision_model: must not be empty"),
        ("image_backend", "dalle", "image_backend: must be one of command, openai"),
        ("images_per_request", "9", "images_per_request: must be between 1 and 4"),
        ("temperature", "hot", "temperature: must be a number"),
        ("image_command", '["flux2", "{prompt}"]', "image_command: must contain {output} (where the image goes)"),
        ("image_command", "flux2 {prompt} {output}", "image_command: must be a JSON list"),
        ("api_key_env", "sk-abc123", "api_key_env: holds the name of the variable"),
        ("sql_update_approval", "never", "sql_update_approval: must be one of ask, auto"),
        ("colour", "red", "colour: unknown field"),
    ],
)
def test_invalid_profile_values_name_the_field_and_change_nothing(env, field, value, message):
    before = profiles.profile_as_dict(env.reload_profile())
    with pytest.raises(profiles.ProfileError) as caught:
        profiles.set_field(env.profile, field, value)
    assert str(caught.value).startswith(message)
    assert profiles.profile_as_dict(env.reload_profile()) == before


def test_searxng_may_be_set_before_its_url(env):
    # issue 11: the pair is checked when web_search is used (see test_polish), not field by field
    profiles.set_field(env.profile, "web_search_backend", "searxng")
    assert env.reload_profile().web_search_backend == "searxng"
    profiles.set_field(env.profile, "web_search_url", "http://127.0.0.1:9")
    assert env.reload_profile().web_search_url == "http://127.0.0.1:9"


def test_first_run_defaults_follow_the_environment():
    assert profiles.default_values({})["base_url"] == "http://localhost:11434/v1"
    values = profiles.default_values({"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1/"})
    assert values["base_url"] == "http://127.0.0.1:1/v1" and values["api_key_env"] == "OPENAI_API_KEY"


@pytest.mark.slow
def test_core_never_imports_textual_and_help_imports_neither_openai_nor_textual():
    code = (
        "import sys, pkgutil, importlib, tui_agent.core as core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'tui_agent.core.'): importlib.import_module(m.name)\n"
        "import tui_agent.commands.ask, tui_agent.commands.tool, tui_agent.commands.profile\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    code = (
        "import sys\nfrom tui_agent.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('openai', 'textual', 'PIL', 'httpx')]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "usage: tui-agent" in out.stdout
