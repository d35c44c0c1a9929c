"""The unified tool loop (SPEC 3): one builder, one client, only the model may change.

``AgentLoop.run_turn`` is an async generator of typed events. Every message is persisted
as it completes; the user's message before the first request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core import llm, slash
from tui_agent.core.context import ContextBuilder
from tui_agent.core.store import errors as store_errors
from tui_agent.core.store import history
from tui_agent.core.store.models import Message, Profile
from tui_agent.core.store.recovery import finish_row
from tui_agent.core.tools.base import ApprovalCallback, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.loop")
FLUSH_INTERVAL_S = 0.5
MAX_MESSAGE_CHARS = 200_000
MAX_TOOL_ARGUMENT_CHARS = 16_000  # longer tool arguments are not run, and kept only as a note
MAX_TOOL_RESULT_CHARS = 32_000  # longer tool results are kept cut, with a note


class AgentLoop:
    """Runs turns of one profile against one vault."""

    def __init__(
        self,
        vault: Vault,
        profile: Profile,
        registry: ToolRegistry,
        *,
        client: llm.LLMClient | None = None,
        approve: ApprovalCallback | None = None,
    ) -> None:
        self.vault = vault
        self.profile = profile
        self.registry = registry
        self._client = client
        self.approve = approve
        self.builder = ContextBuilder(vault)

    @property
    def client(self) -> llm.LLMClient:
        if self._client is None:
            self._client = llm.LLMClient.for_profile(self.profile)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def run_turn(
        self, conversation_id: int | None, text: str, attachments: Sequence[str] = ()
    ) -> AsyncIterator[ev.Event]:
        """One user turn. ``conversation_id`` None starts a new conversation.

        A failure of the store (disk full, damaged file) ends the turn with an error event, not a traceback.
        """
        current = conversation_id
        try:
            async for event in self._turn(conversation_id, text, attachments):
                if isinstance(event, ev.ConversationChanged):
                    current = event.conversation_id
                yield event
        except store_errors.DATABASE_ERRORS as exc:
            failure = store_errors.describe(exc)
            log.error("store failure: %s", failure)
            yield ev.ErrorEvent(str(failure), "store")
            yield ev.Done("error", current)

    async def _turn(
        self, conversation_id: int | None, text: str, attachments: Sequence[str] = ()
    ) -> AsyncIterator[ev.Event]:
        if len(text) > MAX_MESSAGE_CHARS:
            yield ev.ErrorEvent(
                f"message too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}): "
                "nothing was sent; attach long text as a file or shorten it",
                "usage",
            )
            yield ev.Done("error", conversation_id)
            return
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            yield ev.ErrorEvent(str(exc), "usage")
            yield ev.Done("error", conversation_id)
            return
        if command is not None and command.name == "help":
            yield ev.Notice(slash.help_text())
            yield ev.Done("complete", conversation_id)
            return
        if command is not None and command.name == "new":
            conversation = history.new_conversation()
            yield ev.ConversationChanged(conversation.id)
            yield ev.Done("complete", conversation.id)
            return
        files = list(attachments)
        if command is not None and command.attach is not None:
            from tui_agent.core.attachments import AttachmentError, import_image

            try:
                files.append(await import_image(self.vault, command.attach))
            except AttachmentError as exc:
                yield ev.ErrorEvent(str(exc), "attachment")
                yield ev.Done("error", conversation_id)
                return
            text = command.text
        if conversation_id is None:
            conversation_id = history.new_conversation().id
            yield ev.ConversationChanged(conversation_id)
        user = history.add_message(conversation_id, "user", text, attachments=files)
        yield ev.TurnStarted(conversation_id, user.id)

        pending: list[llm.ToolCall] = []
        if command is not None and command.tool is not None:
            call = llm.ToolCall(f"slash_{secrets.token_hex(6)}", command.tool, json.dumps(command.arguments))
            history.add_message(conversation_id, "assistant", "", tool_calls=[_call_dict(call)], model="user-command")
            pending = [call]
        async for event in self._rounds(conversation_id, pending):
            yield event

    async def _rounds(self, conversation_id: int, pending: list[llm.ToolCall]) -> AsyncIterator[ev.Event]:
        rounds = 0
        use_vision = False
        previous_model: str | None = None
        while True:
            if pending:
                rounds += 1
                outcome: dict[str, bool] = {}
                async for event in self._run_tools(conversation_id, pending, outcome):
                    yield event
                use_vision = outcome.get("vision", False)
            model = self.profile.vision_model if use_vision else self.profile.chat_model
            if model != previous_model and (previous_model is not None or use_vision):
                reason = "after the image tool" if use_vision else "back to the chat model"
                log.info("model switched to %s (%s)", model, reason)
                yield ev.ModelSwitched(model, previous_model, reason)
            previous_model = model
            completion: llm.Completion | None = None
            async for item in self._request(conversation_id, model):
                if isinstance(item, llm.Completion):
                    completion = item
                else:
                    yield item
            if completion is None:  # the request failed; the error was reported and saved
                yield ev.Done("error", conversation_id)
                return
            if not completion.tool_calls:
                yield ev.Done("complete", conversation_id)
                return
            if rounds >= int(self.profile.max_tool_rounds):
                message = (
                    f"stopped after {rounds} tool round(s): the model kept calling tools "
                    f"(profile field max_tool_rounds = {self.profile.max_tool_rounds})"
                )
                for call in completion.tool_calls:
                    history.add_message(
                        conversation_id,
                        self.registry.role_of(call.name),
                        ToolResult.fail(f"not run: {message}").to_json(),
                        tool_name=call.name,
                        tool_call_id=call.id,
                        tool_arguments=stored_arguments(call.arguments),
                        status="error",
                    )
                history.add_message(conversation_id, "error", message, status="error")
                yield ev.ErrorEvent(message, "max_rounds")
                yield ev.Done("max_rounds", conversation_id)
                return
            pending = completion.tool_calls

    async def _request(self, conversation_id: int, model: str) -> AsyncIterator[ev.Event | llm.Completion]:
        """One streamed request; the assistant row is written as text arrives and finished at the end."""
        messages = self.builder.build(conversation_id, self.profile)
        yield ev.AssistantStarted(model)
        row: Message | None = None
        parts: list[str] = []
        last_flush = time.monotonic()
        stream: Any = None
        try:
            stream = self.client.stream(
                model=model,
                messages=messages,
                tools=self.registry.schemas(),
                temperature=float(self.profile.temperature),
            )
            async for item in stream:
                if isinstance(item, llm.TextDelta):
                    parts.append(item.text)
                    if row is None:
                        row = history.add_message(
                            conversation_id, "assistant", item.text, model=model, status="streaming"
                        )
                        last_flush = time.monotonic()
                    elif time.monotonic() - last_flush > FLUSH_INTERVAL_S:
                        history.update_message(row, content="".join(parts))
                        last_flush = time.monotonic()
                    yield ev.TextDelta(item.text)
                    continue
                fields: dict[str, Any] = {
                    "content": item.text,
                    "status": "complete",
                    "model": model,
                    "prompt_tokens": item.prompt_tokens,
                    "completion_tokens": item.completion_tokens,
                    "tool_calls": [_call_dict(c) for c in item.tool_calls] or None,
                }
                if row is None:
                    row = history.add_message(conversation_id, "assistant", **fields)
                else:
                    history.update_message(row, **fields)
                yield ev.AssistantFinished(
                    row.id, item.text, model, "complete", item.prompt_tokens, item.completion_tokens
                )
                yield item
        except (asyncio.CancelledError, GeneratorExit):
            if row is not None:
                history.update_message(row, content="".join(parts), status="cancelled")
            raise
        except store_errors.DATABASE_ERRORS:
            # The store failed mid-stream (disk full): the row must not stay "streaming".
            await _close(stream)
            if row is not None:
                finish_row(row.id, "error")
            raise
        except llm.LLMError as exc:
            if row is not None:
                history.update_message(row, content="".join(parts), status="error")
            history.add_message(conversation_id, "error", str(exc), model=model, status="error")
            yield ev.ErrorEvent(str(exc), exc.kind)

    async def _execute(self, call: llm.ToolCall, ctx: ToolContext) -> ToolResult:
        if len(call.arguments) > MAX_TOOL_ARGUMENT_CHARS:
            return ToolResult.fail(
                f"arguments too long ({len(call.arguments):,} characters; the limit is "
                f"{MAX_TOOL_ARGUMENT_CHARS:,}): not run; call it again with shorter arguments"
            )
        return await self.registry.execute(call.name, call.arguments, ctx)

    async def _run_tools(
        self, conversation_id: int, calls: list[llm.ToolCall], outcome: dict[str, bool]
    ) -> AsyncIterator[ev.Event]:
        """Run one round of calls concurrently; results are saved in call order as they complete."""
        ctx = ToolContext(self.vault, self.profile, self.approve)
        for call in calls:
            tool = self.registry.get(call.name)
            arguments = stored_arguments(call.arguments)
            summary = tool.summarize(_loads(arguments)) if tool else f"{call.name} {arguments}"
            yield ev.ToolStarted(call.id, call.name, arguments, summary[:2000])
        tasks = [asyncio.ensure_future(self._execute(c, ctx)) for c in calls]
        saved: set[str] = set()
        try:
            for call, task in zip(calls, tasks, strict=True):
                result = await task
                role = self.registry.role_of(call.name)
                message = history.add_message(
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
                tool = self.registry.get(call.name)
                if tool is not None and tool.vision_followup and result.is_ok and result.images:
                    outcome["vision"] = True
                yield ev.ToolFinished(call.id, call.name, stored_arguments(call.arguments), result, message.id, role)
        except store_errors.DATABASE_ERRORS:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for call in calls:
                if call.id not in saved:
                    history.add_message(
                        conversation_id,
                        self.registry.role_of(call.name),
                        ToolResult.fail("cancelled by the user").to_json(),
                        tool_name=call.name,
                        tool_call_id=call.id,
                        tool_arguments=stored_arguments(call.arguments),
                        status="cancelled",
                    )
            raise


def _call_dict(call: llm.ToolCall) -> dict[str, str]:
    return {"id": call.id, "name": call.name, "arguments": stored_arguments(call.arguments)}


def stored_arguments(raw: str) -> str:
    """Tool arguments as kept (and sent back to the model): too long ones become a JSON note."""
    if len(raw) <= MAX_TOOL_ARGUMENT_CHARS:
        return raw
    note = f"{len(raw):,} characters of arguments were not kept (the limit is {MAX_TOOL_ARGUMENT_CHARS:,})"
    return json.dumps({"note": note, "start": raw[:500]}, ensure_ascii=False)


def stored_result(text: str) -> str:
    """A tool result as kept: a too long one is cut, with a note saying so."""
    if len(text) <= MAX_TOOL_RESULT_CHARS:
        return text
    status = "ok" if text.startswith('{"status": "ok"') else "error"
    note = f"the result had {len(text):,} characters; only the first {MAX_TOOL_RESULT_CHARS:,} were kept"
    return json.dumps({"status": status, "note": note, "start": text[:MAX_TOOL_RESULT_CHARS]}, ensure_ascii=False)


def _loads(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


async def _close(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # the stream is abandoned; its own error does not matter any more
            log.debug("closing the stream failed", exc_info=True)
