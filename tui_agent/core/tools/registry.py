"""The tool registry: lookup, schemas, argument checking, and the one place tools are executed."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from typing import Any

from tui_agent.core.tools.base import Tool, ToolContext, ToolResult

log = logging.getLogger("tui_agent.tools")
ENTRY_POINT_GROUP = "tui_agent.tools"
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


class ToolArgumentError(ValueError):
    """Arguments do not match the tool's schema; the message names the parameter."""


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        _check_schema(tool)
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    def role_of(self, name: str) -> str:
        tool = self._tools.get(name)
        return tool.role if tool else "tool"

    def parse_arguments(self, name: str, raw: str | dict[str, Any]) -> dict[str, Any]:
        """Decode and check arguments against the schema; raise ToolArgumentError naming the problem."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolArgumentError(f"unknown tool: {name!r} (tools: {', '.join(self._tools)})")
        if isinstance(raw, dict):
            arguments = raw
        else:
            try:
                arguments = json.loads(raw or "{}")
            except json.JSONDecodeError as exc:
                raise ToolArgumentError(f"invalid JSON arguments for {name}: {exc.msg} at position {exc.pos}") from None
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"arguments for {name} must be a JSON object")
        if not tool.strict_schema:
            return arguments
        return check_arguments(tool, arguments)

    async def execute(self, name: str, raw_arguments: str | dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one call; every failure becomes an error result, cancellation propagates."""
        try:
            arguments = self.parse_arguments(name, raw_arguments)
        except ToolArgumentError as exc:
            return ToolResult.fail(str(exc))
        try:
            return await self._tools[name].execute(arguments, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool bug must not end the turn or lose the conversation
            log.exception("tool %s crashed", name)
            return ToolResult.fail(f"{name} failed unexpectedly: {exc.__class__.__name__}: {exc}")


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = tool.parameters.get("properties", {})
    for required in tool.parameters.get("required", []):
        if required not in arguments or arguments[required] is None:
            raise ToolArgumentError(f"missing parameter: {required}")
    checked: dict[str, Any] = {}
    for key, value in arguments.items():
        if key not in props:
            raise ToolArgumentError(f"unknown parameter: {key} (parameters: {', '.join(props)})")
        expected = props[key].get("type")
        if value is None:
            continue
        if expected == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        if expected == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        types = _JSON_TYPES.get(expected or "", (object,))
        if not isinstance(value, types) or (expected in ("integer", "number") and isinstance(value, bool)):
            raise ToolArgumentError(f"parameter {key} must be of type {expected}, got {type(value).__name__}")
        checked[key] = value
    return checked


def _check_schema(tool: Tool) -> None:
    if not tool.strict_schema:
        return
    props = tool.parameters.get("properties", {})
    for key, spec in props.items():
        if "type" not in spec or "description" not in spec:
            raise ValueError(f"tool {tool.name}: parameter {key} needs a type and a description")


def default_registry() -> ToolRegistry:
    """The built-in tools plus any registered under the ``tui_agent.tools`` entry point group."""
    from importlib.metadata import entry_points  # ~10 ms: only when the tools are built

    from tui_agent.core.tools.edit_image import EditImageTool
    from tui_agent.core.tools.generate_image import GenerateImageTool
    from tui_agent.core.tools.memory_sql import MemorySqlTool
    from tui_agent.core.tools.show_image import ShowImageTool
    from tui_agent.core.tools.web_search import WebSearchTool

    registry = ToolRegistry([GenerateImageTool(), EditImageTool(), WebSearchTool(), MemorySqlTool(), ShowImageTool()])
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            registry.register(entry.load()())
        except Exception:
            log.exception("could not load tool plugin %s", entry.name)
    return registry
