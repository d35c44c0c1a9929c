"""The unified loop against the loopback server with the real openai client."""

from __future__ import annotations

import asyncio
import json

from backends import BOTH_BACKENDS
from fake_openai import Reply
from helpers import EchoTool, done, make_loop, rows, run_turn

from tui_agent.core import events as ev
from tui_agent.core.tools.registry import ToolRegistry

pytestmark = BOTH_BACKENDS


async def test_plain_reply_is_streamed_and_persisted(env):
    env.fake.script(Reply(text="Hello **world**, this is a reply.", chunk_size=3))
    events = await run_turn(env, "hi")
    assert done(events).status == "complete"
    text = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    assert text == "Hello **world**, this is a reply."
    assert len([e for e in events if isinstance(e, ev.TextDelta)]) > 5
    assert rows(env.vault.db_path) == [
        (1, "user", "hi", "complete", None),
        (2, "assistant", "Hello **world**, this is a reply.", "complete", "chat-model"),
    ]
    request = env.fake.chat_requests[0]
    assert request["model"] == "chat-model"
    assert request["messages"][-1] == {"role": "user", "content": "hi"}
    assert request["stream"] is True
    finished = next(e for e in events if isinstance(e, ev.AssistantFinished))
    assert finished.prompt_tokens == 10 and finished.completion_tokens


async def test_request_after_a_tool_uses_the_same_pipeline(env):
    env.profile.memory = "The user's cat is called Miso."
    env.profile.save()
    env.fake.script(
        Reply(text="Earlier reply."),
        Reply(text="Let me check. ", tool_calls=[("echo", '{"text": "ping"}')]),
        Reply(text="The tool said ping."),
    )
    registry = ToolRegistry([EchoTool()])
    first = await run_turn(env, "first question", registry=registry)
    conversation = done(first).conversation_id
    events = await run_turn(env, "use the tool", conversation, registry=registry)
    assert done(events).status == "complete"
    before, after = env.fake.chat_requests[1], env.fake.chat_requests[2]
    assert before["messages"][0] == after["messages"][0]
    assert "Miso" in before["messages"][0]["content"]
    assert before["tools"] == after["tools"] and before["tools"][0]["function"]["name"] == "echo"
    assert before["model"] == after["model"] == "chat-model"
    assert after["messages"][: len(before["messages"])] == before["messages"]
    added = after["messages"][len(before["messages"]) :]
    assert [m["role"] for m in added] == ["assistant", "tool"]
    call = added[0]["tool_calls"][0]
    assert call["function"] == {"name": "echo", "arguments": '{"text": "ping"}'}
    assert added[1]["tool_call_id"] == call["id"]
    assert json.loads(added[1]["content"]) == {"status": "ok", "data": {"echo": "ping"}}
    stored = rows(env.vault.db_path, "SELECT role, tool_name, tool_call_id FROM messages WHERE role = 'echo_tool'")
    assert stored == [("echo_tool", "echo", call["id"])]


async def test_vision_model_only_after_image_tool_and_images_stay_in_order(env):
    env.fake.script(
        Reply(
            tool_calls=[
                (
                    "generate_image",
                    json.dumps({"prompt": "a red fox", "path": "animals/fox.png", "count": 1, "reason": "asked"}),
                )
            ]
        ),
        Reply(text="A fox in the snow."),
        Reply(text="Anything else?"),
    )
    events = await run_turn(env, "draw a fox")
    conversation = done(events).conversation_id
    assert [e.model for e in events if isinstance(e, ev.ModelSwitched)] == ["vision-model"]
    first, follow_up = env.fake.chat_requests
    assert first["model"] == "chat-model" and follow_up["model"] == "vision-model"
    tail = follow_up["messages"][-4:]
    assert tail[0]["role"] == "assistant" and tail[1]["role"] == "tool"
    # Strict servers (Mistral) reject user right after tool: a short assistant turn goes between.
    assert tail[2] == {"role": "assistant", "content": "The tool finished; its image output follows."}
    image_message = tail[3]
    assert image_message["role"] == "user"
    parts = image_message["content"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert (env.vault.media / "animals" / "fox.png").is_file()
    # The next turn goes back to the chat model and keeps the image right after its tool result.
    events = await run_turn(env, "thanks", conversation)
    third = env.fake.chat_requests[2]
    assert third["model"] == "chat-model"
    roles = [m["role"] for m in third["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "user"]
    assert isinstance(third["messages"][5]["content"], list)
    assert third["messages"][-1]["content"] == "thanks"


async def test_user_images_keep_their_place(env, tmp_path):
    from fake_openai import png_bytes

    env.profile.chat_accepts_images = "yes"  # a chat model that takes images sees every image again
    env.profile.save()
    (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
    (env.vault.uploads / "b.png").write_bytes(png_bytes((4, 5, 6)))
    events = await run_turn(env, "/attach media/uploads/a.png look at this")
    conversation = done(events).conversation_id
    await run_turn(env, "plain", conversation)
    await run_turn(env, "/attach media/uploads/b.png and this", conversation)
    messages = env.fake.chat_requests[-1]["messages"]
    kinds = [("img" if isinstance(m["content"], list) else "txt") for m in messages if m["role"] == "user"]
    assert kinds == ["img", "txt", "img"]
    assert messages[1]["content"][0] == {"type": "text", "text": "look at this"}


async def test_max_tool_rounds_stops_a_runaway_loop(env):
    env.profile.max_tool_rounds = 2
    env.profile.save()
    env.fake.script(*[Reply(tool_calls=[("echo", '{"text": "again"}')]) for _ in range(5)])
    events = await run_turn(env, "loop forever", registry=ToolRegistry([EchoTool()]))
    assert done(events).status == "max_rounds"
    error = next(e for e in events if isinstance(e, ev.ErrorEvent))
    assert "max_tool_rounds" in error.message
    assert len(env.fake.chat_requests) == 3
    # Every call has a stored answer, so the conversation can continue.
    env.fake.script(Reply(text="done"))
    events = await run_turn(env, "stop", done(events).conversation_id, registry=ToolRegistry([EchoTool()]))
    assert done(events).status == "complete"


async def test_cancel_keeps_the_partial_reply(env):
    env.fake.script(Reply(text="x" * 400, chunk_size=4, chunk_delay_s=0.02))
    loop = make_loop(env)
    seen: list[str] = []

    async def consume():
        async for event in loop.run_turn(None, "tell me a long story"):
            if isinstance(event, ev.TextDelta):
                seen.append(event.text)

    task = asyncio.create_task(consume())
    while len(seen) < 5:
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await loop.aclose()
    stored = rows(env.vault.db_path, "SELECT role, status, content FROM messages ORDER BY id")
    assert stored[0] == ("user", "complete", "tell me a long story")
    assert stored[1][0:2] == ("assistant", "cancelled")
    assert stored[1][2].startswith("".join(seen)[:20]) and 0 < len(stored[1][2]) < 400


async def test_the_system_prompt_names_the_sql_the_memory_tool_takes(env, store_backend):
    """On a PostgreSQL store the model is told it writes PostgreSQL, as the tool's own description says."""
    await run_turn(env, "hello")
    system = env.fake.chat_requests[0]["messages"][0]["content"]
    dialect = "PostgreSQL" if store_backend == "postgresql" else "SQLite"
    assert f"memory_sql runs ONE {dialect} SELECT" in system
