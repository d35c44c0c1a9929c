"""The unified tool loop (SPEC 3): one builder, one client, only the model may change.

``AgentLoop.run_turn`` is an async generator of typed events. Every message is persisted
as it completes; the user's message before the first request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any

from tui_agent.core import events as ev
from tui_agent.core import llm, slash, turn_rows
from tui_agent.core.ahead import Ahead
from tui_agent.core.context import ContextBuilder
from tui_agent.core.limits import message_too_long
from tui_agent.core.models import caps
from tui_agent.core.models.fit import schema_tokens
from tui_agent.core.models.request_fit import RequestFit
from tui_agent.core.reply import Reply as _Reply
from tui_agent.core.reply import call_dict as _call_dict
from tui_agent.core.reply import temperature as _temperature
from tui_agent.core.reply_keep import keep_locally
from tui_agent.core.store import branches, history, worker
from tui_agent.core.store import errors as store_errors
from tui_agent.core.store.models import Message, Profile
from tui_agent.core.store.recovery import finish_row
from tui_agent.core.tool_caps import stored_arguments
from tui_agent.core.tool_round import run_tools
from tui_agent.core.tools.base import ApprovalCallback, ToolContext, ToolResult
from tui_agent.core.tools.registry import ToolRegistry
from tui_agent.core.turn_guard import close_stream, past_cancels, store_guarded
from tui_agent.core.vault import Vault

log = logging.getLogger("tui_agent.loop")
FLUSH_INTERVAL_S = 0.5


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
        keep_client: bool = False,
    ) -> None:
        """``keep_client``: the client outlives this loop (the app reuses one, and its open
        connection, across turns); :meth:`aclose` leaves it open."""
        self.vault = vault
        self.profile = profile
        self.registry = registry
        self._client = client
        self._keep_client = keep_client and client is not None
        self.approve = approve
        self.builder = ContextBuilder(vault)
        self.fitting = RequestFit(vault, profile)
        self._attached: set[int] = set()  # the message regenerate follows, when it carries images

    @property
    def client(self) -> llm.LLMClient:
        if self._client is None:
            self._client = llm.LLMClient.for_profile(self.profile)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and not self._keep_client:
            await self._client.close()

    async def regenerate(self, message_id: int) -> AsyncGenerator[ev.Event, None]:
        """Answer again in place of assistant message ``message_id``: same builder, same model rules.

        The old reply stays as an alternative (a sibling under the same parent, see store.branches);
        the new one becomes the active branch."""
        async with aclosing(store_guarded(self._regenerate(message_id), None)) as relayed:
            async for event in relayed:
                yield event

    async def _regenerate(self, message_id: int) -> AsyncGenerator[ev.Event, None]:
        message, parent = await worker.run(turn_rows.regenerating, message_id)
        if message is None or message.role != "assistant":
            yield ev.ErrorEvent(f"message {message_id} is not an assistant reply: nothing to regenerate", "usage")
            yield ev.Done("error", message.conversation_id if message is not None else None)
            return
        conversation_id = message.conversation_id
        await worker.run(branches.rewind_to_parent_of, message_id)
        yield ev.BranchChanged(conversation_id)
        if parent is not None and parent.tool_name is not None:
            self._attached = {parent.id} if await worker.run(history.attachments_for, [parent.id]) else set()
        async with aclosing(self._rounds(conversation_id, [], use_vision=self._vision_after(parent))) as relayed:
            async for event in relayed:
                yield event

    def _vision_after(self, message: Message | None) -> bool:
        """The model rule for a request that follows ``message``: vision right after the image tool's images."""
        if message is None or message.tool_name is None or message.role == "assistant":
            return False
        tool = self.registry.get(message.tool_name)
        return bool(tool and tool.vision_followup and message.id in self._attached)

    async def run_turn(
        self, conversation_id: int | None, text: str, attachments: Sequence[str] = (), *, edit_of: int | None = None
    ) -> AsyncGenerator[ev.Event, None]:
        """One user turn. ``conversation_id`` None starts a new conversation.

        ``edit_of``: the user message this one replaces; the conversation forks there (the old
        branch is kept and can be chosen again).

        A failure of the store (disk full, damaged file) ends the turn with an error event, not a traceback.
        """
        async with aclosing(
            store_guarded(self._turn(conversation_id, text, attachments, edit_of), conversation_id)
        ) as relayed:
            async for event in relayed:
                yield event

    async def _turn(
        self, conversation_id: int | None, text: str, attachments: Sequence[str], edit_of: int | None
    ) -> AsyncGenerator[ev.Event, None]:
        if (too_long := message_too_long(text)) is not None:
            yield ev.ErrorEvent(too_long, "usage")
            yield ev.Done("error", conversation_id)
            return
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            yield ev.ErrorEvent(str(exc), "usage")
            yield ev.Done("error", conversation_id)
            return
        if command is not None and command.name == slash.HELP:
            yield ev.Notice(slash.help_text())
            yield ev.Done("complete", conversation_id)
            return
        if command is not None and command.name == slash.NEW:
            conversation = await worker.run(history.new_conversation)
            yield ev.ConversationChanged(conversation.id)
            yield ev.Done("complete", conversation.id)
            return
        if command is None:
            text = slash.literal(text)  # "//text" sends "/text"
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
            conversation_id = (await worker.run(history.new_conversation)).id
            yield ev.ConversationChanged(conversation_id)
        if edit_of is not None:
            edited = await worker.run(Message.get_or_none, Message.id == edit_of)
            if edited is None or edited.role != "user" or edited.conversation_id != conversation_id:
                yield ev.ErrorEvent(f"message {edit_of} is not a user message of this conversation", "usage")
                yield ev.Done("error", conversation_id)
                return
            await worker.run(branches.rewind_to_parent_of, edit_of)
            yield ev.BranchChanged(conversation_id)
        read = self.builder.first_read(self.profile)
        added = await worker.run(turn_rows.add_user_message, conversation_id, text, files, read)
        user, title, alternatives, recent = added
        stored = ev.StoredMessage(user.id, text, files, alternatives)
        yield ev.TurnStarted(conversation_id, user.id, stored, title)
        if command is None or command.tool is None:
            self.builder.prefetched(conversation_id, read, *recent)  # read with the message: no round trip more

        pending: list[llm.ToolCall] = []
        if command is not None and command.tool is not None:
            call = llm.ToolCall(llm.new_call_id(), command.tool, json.dumps(command.arguments))
            await worker.run(
                history.add_message,
                conversation_id,
                "assistant",
                "",
                tool_calls=[_call_dict(call)],
                model="user-command",
            )
            pending = [call]
        # A text-only chat model cannot take the user's images: this turn starts on the vision model.
        await self.fitting.know(self.profile.chat_model)  # does the server say it has vision?
        sees_images = bool(files) and not caps.accepts_images(self.profile, self.profile.chat_model)
        async with aclosing(self._rounds(conversation_id, pending, use_vision=sees_images)) as relayed:
            async for event in relayed:
                yield event

    async def retry_turn(self, conversation_id: int) -> AsyncGenerator[ev.Event, None]:
        """Run the last turn of a conversation again after it failed, from its stored user message
        (nothing is added for the user; tool results it already has are kept)."""
        async with aclosing(store_guarded(self._retry_turn(conversation_id), conversation_id)) as relayed:
            async for event in relayed:
                yield event

    async def _retry_turn(self, conversation_id: int) -> AsyncGenerator[ev.Event, None]:
        from tui_agent.core.retry import RetryError, failed_turn

        try:
            user = await worker.run(failed_turn, conversation_id)
        except RetryError as exc:
            yield ev.ErrorEvent(str(exc), "retry")
            yield ev.Done("error", conversation_id)
            return
        yield ev.TurnRetried(conversation_id, user.id)
        files = (await worker.run(history.attachments_for, [user.id])).get(user.id, [])
        await self.fitting.know(self.profile.chat_model)
        sees_images = bool(files) and not caps.accepts_images(self.profile, self.profile.chat_model)
        async with aclosing(self._rounds(conversation_id, [], use_vision=sees_images)) as relayed:
            async for event in relayed:
                yield event

    async def _rounds(
        self, conversation_id: int, pending: list[llm.ToolCall], *, use_vision: bool = False
    ) -> AsyncGenerator[ev.Event, None]:
        rounds = 0
        previous_model: str | None = None
        while True:
            if pending:
                rounds += 1
                outcome: dict[str, bool] = {}
                round_ = run_tools(
                    self.registry,
                    ToolContext(self.vault, self.profile, self.approve, conversation_id=conversation_id),
                    conversation_id,
                    pending,
                    outcome,
                )
                async with aclosing(round_) as relayed:
                    async for event in relayed:
                        yield event
                use_vision = outcome.get("vision", False)
            model = self.profile.vision_model if use_vision else self.profile.chat_model
            if model != previous_model and (previous_model is not None or use_vision):
                reason = "after the image tool" if use_vision and rounds else "back to the chat model"
                reason = "for the attached image" if use_vision and not rounds else reason
                log.info("model switched to %s (%s)", model, reason)
                yield ev.ModelSwitched(model, previous_model, reason)
                if use_vision and (blind := await self.fitting.blind_vision(model)) is not None:
                    yield ev.ModelNotice(blind)
            previous_model = model
            completion: llm.Completion | None = None
            async with aclosing(self._request(conversation_id, model)) as request:
                async for item in request:
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
                await worker.run(self._stop_rounds, conversation_id, completion.tool_calls, message)
                yield ev.ErrorEvent(message, "max_rounds")
                yield ev.Done("max_rounds", conversation_id)
                return
            pending = completion.tool_calls

    def _stop_rounds(self, conversation_id: int, calls: list[llm.ToolCall], message: str) -> None:
        """max_tool_rounds reached: each call stored as not run, and the error."""
        for call in calls:
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

    async def _request(self, conversation_id: int, model: str) -> AsyncGenerator[ev.Event | llm.Completion, None]:
        """One streamed request; the assistant row is written as text arrives and finished at the end."""
        info = await self.fitting.know(model)
        tools, notices = self.fitting.tools_for(info, self.registry.schemas())
        messages = await worker.run(
            self.builder.build,
            conversation_id,
            self.profile,
            model,
            window=self.fitting.window(info),
            tools_tokens=schema_tokens(tools),
        )
        notices += self.fitting.fit_notices(info, self.builder)
        reply = _Reply(conversation_id, model, FLUSH_INTERVAL_S)
        finished = False
        unsaved: Any = None
        stream: Ahead[Any] | None = None
        try:
            # The request leaves now: the events below are drawn while it travels, not before.
            stream = Ahead(
                self.client.stream(
                    model=model,
                    messages=messages,
                    tools=tools,
                    temperature=_temperature(self.profile),
                )
            )
            window = self.builder.window
            if window is not None:
                yield ev.ContextBuilt(
                    conversation_id,
                    window.estimated_tokens,
                    window.budget_tokens,
                    window.first_message_id,
                    window.truncated,
                )
            for notice in notices:
                yield ev.ModelNotice(notice)
            yield ev.AssistantStarted(model)
            async for item in stream:
                if isinstance(item, llm.Completion):
                    row, alternatives = await reply.finish_with_alternatives(item)
                    finished = True  # a cancel or close from here on must not unfinish the stored reply
                    yield ev.AssistantFinished(
                        row.id,
                        item.text,
                        model,
                        "complete",
                        item.prompt_tokens,
                        item.completion_tokens,
                        reasoning=item.reasoning,
                        alternatives=alternatives,
                    )
                    if (cut := self.fitting.cut_notice(info, item.prompt_tokens, self.builder)) is not None:
                        yield ev.ModelNotice(cut)
                    yield item
                elif isinstance(item, llm.Restart):
                    # The server said the failure is transient: the partial reply stays, the request goes again.
                    partial = await reply.save("error")
                    partial_alternatives = await worker.run(turn_rows.alternatives_of, partial) if partial else []
                    yield ev.AssistantFinished(
                        partial.id if partial else None,
                        reply.text,
                        model,
                        "error",
                        reasoning=reply.reasoning,
                        alternatives=partial_alternatives,
                    )
                    reply = _Reply(conversation_id, model, FLUSH_INTERVAL_S)
                    yield ev.AssistantStarted(model)
                else:
                    unsaved = item  # the store may fail saving it: it is shown all the same (below)
                    event = await reply.add(item)
                    unsaved = None
                    if event is not None:
                        yield event
        except (asyncio.CancelledError, GeneratorExit):
            if not finished:
                await past_cancels(reply.save("cancelled"))
            raise
        except store_errors.DATABASE_ERRORS as exc:
            # The store failed mid-stream (disk full, the server gone): the row must not stay
            # "streaming", and what came is kept in the vault (reply_keep), whatever the store took.
            if not finished:
                if reply.row is not None:
                    await worker.run(finish_row, reply.row.id, "error")
                row_id = reply.row.id if reply.row is not None else None
                exc.kept_row = row_id  # type: ignore[attr-defined]
                exc.kept_in = keep_locally(self.vault, conversation_id, row_id, model, reply.text, reply.reasoning)  # type: ignore[attr-defined]
                if isinstance(unsaved, (ev.TextDelta, ev.ReasoningDelta)):
                    yield unsaved  # the screen shows what the kept file holds
            raise
        except llm.LLMError as exc:
            await reply.save("error")
            await worker.run(history.add_message, conversation_id, "error", str(exc), model=model, status="error")
            yield ev.ErrorEvent(str(exc), exc.kind)
        finally:
            if stream is not None:
                await close_stream(stream)  # a request still on its way (a cancel while its events were drawn) ends
            await reply.drain()  # nothing of the turn is left running
