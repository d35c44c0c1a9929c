"""Text-only chat models (issue 11 item 4): earlier images go as short notes, only the request to
a model that takes images (the vision follow-up, or a turn with the user's image) carries pixels."""

from __future__ import annotations

from fake_openai import png_bytes
from helpers import done, run_turn

from tui_agent.core import profiles


def image_parts(message) -> int:
    content = message["content"]
    return sum(1 for p in content if p.get("type") == "image_url") if isinstance(content, list) else 0


def notes(messages) -> list[str]:
    found = []
    for m in messages:
        content = m["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        found += [
            p["text"]
            for p in parts
            if p.get("type") == "text" and "(image data not sent with this request)" in p["text"]
        ]
    return found


async def test_a_text_only_chat_model_gets_notes_and_only_the_vision_follow_up_pixels(env):
    assert profiles.accepts_images(env.profile, "chat-model") is False  # auto: chat differs from vision
    events = await run_turn(env, "/imagine a fox")
    conversation = done(events).conversation_id
    await run_turn(env, "nice", conversation)
    await run_turn(env, "/imagine an owl", conversation)
    await run_turn(env, "thanks", conversation)
    requests = env.fake.chat_requests
    assert [r["model"] for r in requests] == ["vision-model", "chat-model", "vision-model", "chat-model"]
    pixels = [sum(image_parts(m) for m in r["messages"]) for r in requests]
    assert pixels == [2, 0, 2, 0]  # was 2, 2, 4, 4: every image again on every request
    assert len(notes(requests[1]["messages"])) == 2
    assert len(notes(requests[2]["messages"])) == 2 and len(notes(requests[3]["messages"])) == 4
    assert notes(requests[1]["messages"])[0].startswith("[image: media/imagine/")


async def test_a_chat_model_that_takes_images_sees_them_all(env):
    profiles.set_field(env.profile, "chat_accepts_images", "yes")
    events = await run_turn(env, "/imagine a fox")
    await run_turn(env, "nice", done(events).conversation_id)
    assert [sum(image_parts(m) for m in r["messages"]) for r in env.fake.chat_requests] == [2, 2]


async def test_an_attached_image_goes_to_the_vision_model_when_chat_is_text_only(env):
    (env.vault.uploads / "a.png").write_bytes(png_bytes((1, 2, 3)))
    events = await run_turn(env, "/attach media/uploads/a.png what is this")
    await run_turn(env, "and now?", done(events).conversation_id)
    first, second = env.fake.chat_requests
    assert first["model"] == "vision-model" and sum(image_parts(m) for m in first["messages"]) == 1
    assert second["model"] == "chat-model" and sum(image_parts(m) for m in second["messages"]) == 0
    assert "[image: media/uploads/a.png (image data not sent with this request)]" in second["messages"][1]["content"]
