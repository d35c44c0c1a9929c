"""Shared fixtures: a loopback OpenAI-compatible server, a fresh vault, the fake flux2 on PATH."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

from fake_openai import FakeOpenAI  # noqa: E402

from tui_agent.core import profiles  # noqa: E402
from tui_agent.core.store import open_database  # noqa: E402
from tui_agent.core.store.models import Profile  # noqa: E402
from tui_agent.core.vault import Vault, setup_logging  # noqa: E402

pytest_plugins = ["snapshot_setup", "serve_helpers"]  # serve_helpers: the session-wide Chromium


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's keys, vault or PATH surprises; the fake flux2 is on PATH."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TUI_AGENT_VAULT", "TUI_AGENT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "PATH", f"{TESTS / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    monkeypatch.setenv("FLUX2_LOG", str(tmp_path / "flux2.log"))


@dataclass
class VaultEnv:
    vault: Vault
    profile: Profile
    fake: FakeOpenAI

    def reload_profile(self) -> Profile:
        self.profile = Profile.get_by_id(self.profile.id)
        return self.profile


@pytest.fixture
def env(tmp_path: Path, fake_llm: FakeOpenAI) -> Iterator[VaultEnv]:
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    db = open_database(vault.db_path)
    profile = profiles.create_profile(
        "test",
        {
            "base_url": fake_llm.base_url,
            "api_key_env": "",
            "chat_model": "chat-model",
            "vision_model": "vision-model",
            "image_model": "flux2-test",
            "request_timeout_s": 5,
        },
    )
    profiles.use_profile("test")
    yield VaultEnv(vault, profile, fake_llm)
    db.close()


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport | None:
    """In CI (``CI=true``) every system tool is installed by ``.ci/run``: a test that skips for a
    missing tool (its reason says ``apt-get install``) fails there instead of passing silently."""
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        return None
    report = pytest.TestReport.from_item_and_call(item, call)
    if report.skipped and isinstance(report.longrepr, tuple) and "apt-get install" in str(report.longrepr[2]):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where .ci/run installs every system tool: {report.longrepr[2]}"
    return report
