"""A vault whose profile points at the replay server, test tools that record their calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from helpers import loopback_profile, rows
from sse_replay import ReplayServer

from tui_agent.core.llm import LLMClient
from tui_agent.core.loop import AgentLoop
from tui_agent.core.store import open_database
from tui_agent.core.store.models import Profile
from tui_agent.core.tools.base import Tool, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.vault import Vault, setup_logging


class Recording(Tool):
    calls: ClassVar[list[dict[str, Any]]] = []
    description = "test tool"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        Recording.calls.append({"tool": self.name, **arguments})
        return ToolResult.ok({"result": f"{self.name} ran"})


def one_text_parameter(name: str, description: str) -> dict[str, Any]:
    """A tool's JSON schema: one required string."""
    return {"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]}


class GetWeather(Recording):
    name = "get_weather"
    role = "weather_tool"
    parameters: ClassVar[dict[str, Any]] = one_text_parameter("location", "City.")


class WebSearch(Recording):
    name = "web_search"
    role = "web_search"
    parameters: ClassVar[dict[str, Any]] = one_text_parameter("query", "Query.")


#: The client's read timeout: no test here is about a timeout (the replay server never holds a reply),
#: and 5 s was a guess at the machine's speed (a loaded one can take longer to send a turn's words).
TIMEOUT_S = 60


class Env:
    def __init__(self, vault: Vault, profile: Profile, replay: ReplayServer) -> None:
        self.vault = vault
        self.profile = profile
        self.replay = replay

    async def turn(self, text: str = "hi", conversation_id: int | None = None) -> list[Any]:
        client = LLMClient(self.replay.base_url, "test-key", timeout=TIMEOUT_S, backoff_s=0.01)
        loop = AgentLoop(self.vault, self.profile, ToolRegistry([GetWeather(), WebSearch()]), client=client)
        try:
            return [e async for e in loop.run_turn(conversation_id, text)]
        finally:
            await loop.aclose()

    def messages(self) -> list[tuple[Any, ...]]:
        return rows(
            self.vault.db_path,
            "SELECT role, content, reasoning, status, tool_calls, tool_name FROM messages ORDER BY id",
        )


@pytest.fixture
def penv(tmp_path: Path) -> Iterator[Env]:
    replay = ReplayServer().start()
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    db = open_database(vault.db_path)
    profile = loopback_profile("replay", replay.base_url, TIMEOUT_S)
    Recording.calls.clear()
    yield Env(vault, profile, replay)
    db.close()
    replay.stop()
