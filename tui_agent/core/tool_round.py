"""One round of tool calls (SPEC 3): run concurrently, each result stored in call order as it
completes; a round cancelled part-way stores "cancelled by the user" for the calls left."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core.store import errors as store_errors
from tui_agent.core.store import history, worker
from tui_agent.core.stream_assembly import ToolCall
from tui_agent.core.tool_caps import MAX_TOOL_ARGUMENT_CHARS, stored_arguments, stored_result
from tui_agent.core.tools.base import ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.turn_guard import past_cancels


async def _execute(registry: ToolRegistry, call: ToolCall, ctx: ToolContext) -> ToolResult:
    if len(call.arguments) > MAX_TOOL_ARGUMENT_CHARS:
        return ToolResult.fail(
            f"arguments too long ({len(call.arguments):,} characters; the limit is "
            f"{MAX_TOOL_ARGUMENT_CHARS:,}): not run; call it again with shorter arguments"
        )
    return await registry.execute(call.name, call.arguments, ctx)


async def run_tools(
    registry: ToolRegistry, ctx: ToolContext, conversation_id: int, calls: list[ToolCall], outcome: dict[str, bool]
) -> AsyncGenerator[ev.Event, None]:
    """Run one round of calls concurrently; results are saved in call order as they complete."""
    tasks: list[asyncio.Future[ToolResult]] = []
    saved: set[str] = set()
    try:  # from the first event: closed while the calls are being shown, they are stored as cancelled
        for call in calls:
            tool = registry.get(call.name)
            arguments = stored_arguments(call.arguments)
            summary = tool.summarize(_loads(arguments)) if tool else f"{call.name} {arguments}"
            yield ev.ToolStarted(call.id, call.name, arguments, summary[:2000])
        tasks = [asyncio.ensure_future(_execute(registry, c, ctx)) for c in calls]
        for call, task in zip(calls, tasks, strict=True):
            result = await task
            role = registry.role_of(call.name)
            message = await worker.run(
                history.add_message,
                conversation_id,
                role,
                stored_result(result.to_json()),
                attachments=result.images,
                tool_name=call.name,
                tool_call_id=call.id,
                tool_arguments=stored_arguments(call.arguments),
                status="complete" if result.is_ok else "error",
            )
            saved.add(call.id)
            tool = registry.get(call.name)
            if tool is not None and tool.vision_followup and result.is_ok and result.images:
                outcome["vision"] = True
            yield ev.ToolFinished(call.id, call.name, stored_arguments(call.arguments), result, message.id, role)
    except store_errors.DATABASE_ERRORS:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    except (asyncio.CancelledError, GeneratorExit):
        await past_cancels(_cancelled(registry, conversation_id, calls, tasks, saved))
        raise


async def _cancelled(
    registry: ToolRegistry,
    conversation_id: int,
    calls: list[ToolCall],
    tasks: list[asyncio.Future[ToolResult]],
    saved: set[str],
) -> None:
    """The round was cancelled: the calls still running end; those without a result are stored
    as cancelled."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for call in calls:
        if call.id not in saved:
            await worker.run(
                history.add_message,
                conversation_id,
                registry.role_of(call.name),
                ToolResult.fail("cancelled by the user").to_json(),
                tool_name=call.name,
                tool_call_id=call.id,
                tool_arguments=stored_arguments(call.arguments),
                status="cancelled",
            )


def _loads(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
