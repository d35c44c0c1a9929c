"""Imports are validated, never trusted (issue 26.5).

Every malformed export is one line naming the field, exit 1, nothing written; and a stored row the
context builder cannot use as it is (an assistant row whose ``tool_calls`` is not a list of calls)
is left out, so the conversation's next turn still runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from fake_openai import Reply, png_bytes
from helpers import rows

pytestmark = BOTH_BACKENDS

GOOD_MESSAGE = {"id": 1, "role": "user", "content": "hello", "attachments": [], "revisions": []}


def export(**changes) -> dict:
    data = {
        "format": "tui-agent-conversation",
        "version": 1,
        "conversation": {"id": 1, "title": "t", "leaf_id": 2},
        "messages": [dict(GOOD_MESSAGE), {"id": 2, "role": "assistant", "content": "hi", "parent_id": 1}],
    }
    data.update(changes)
    return data


def with_message(**fields) -> dict:
    data = export()
    data["messages"][1].update(fields)
    return data


# (what the file holds, the start of the one-line error)
CORPUS: list[tuple[str, bytes, str]] = [
    (
        "version text",
        json.dumps(export(version="abc")).encode(),
        'error: version: must be a whole number from 1, not "abc"',
    ),
    ("version newer", json.dumps(export(version=7)).encode(), "error: version: 7 is newer"),
    ("version bool", json.dumps(export(version=True)).encode(), "error: version: must be a whole number"),
    ("a list", b"[1]", "error: not a tui-agent conversation export"),
    ("not JSON", b"{oops", "error: {file} is not JSON (Expecting property name"),
    (
        "a Markdown export",  # what `history export --format md` writes: for reading, not for import
        b"# A fox\n\n**You**\n\nhello\n",
        "error: {file} looks like a Markdown export: only a JSON export can be imported",
    ),
    ("a number", b"5", "error: not a tui-agent conversation export"),
    ("messages object", json.dumps(export(messages={"a": 1})).encode(), "error: messages: must be a list"),
    ("message a number", json.dumps(export(messages=[1])).encode(), "error: messages[0]: must be an object"),
    ("conversation list", json.dumps(export(conversation=[1])).encode(), "error: conversation: must be an object"),
    ("title number", json.dumps(export(conversation={"title": 5})).encode(), "error: conversation.title: must be text"),
    (
        "attachments 5",
        json.dumps(with_message(attachments=5)).encode(),
        "error: messages[1].attachments: must be a list",
    ),
    (
        "attachment string",
        json.dumps(with_message(attachments=["media/a.png"])).encode(),
        "error: messages[1].attachments[0]: must be an object",
    ),
    (
        "attachment position",
        json.dumps(with_message(attachments=[{"path": "a.png", "position": "x"}])).encode(),
        "error: messages[1].attachments[0].position",
    ),
    (
        "revisions strings",
        json.dumps(with_message(revisions=["a"])).encode(),
        "error: messages[1].revisions[0]: must be an object",
    ),
    (
        "revision content",
        json.dumps(with_message(revisions=[{"content": 5}])).encode(),
        "error: messages[1].revisions[0].content: must be text",
    ),
    (
        "role missing",
        json.dumps(export(messages=[{"content": "x"}])).encode(),
        "error: messages[0].role: must be a role name",
    ),
    ("role escape", json.dumps(export(messages=[{"role": "user\x1b]0;T\x07"}])).encode(), "error: messages[0].role"),
    ("content list", json.dumps(with_message(content=["a"])).encode(), "error: messages[1].content: must be text"),
    ("content null", json.dumps(with_message(content=None)).encode(), "error: messages[1].content: must be text"),
    ("status number", json.dumps(with_message(status=3)).encode(), "error: messages[1].status: must be text"),
    (
        "tokens text",
        json.dumps(with_message(prompt_tokens="9")).encode(),
        "error: messages[1].prompt_tokens: must be a whole number",
    ),
    ("parent text", json.dumps(with_message(parent_id="1")).encode(), "error: messages[1].parent_id"),
    (
        "tool_calls not json",
        json.dumps(with_message(tool_calls="{not json")).encode(),
        "error: messages[1].tool_calls: not JSON",
    ),
    (
        "tool_calls [{}]",
        json.dumps(with_message(tool_calls="[{}]")).encode(),
        'error: messages[1].tool_calls: call 0 needs "id"',
    ),
    (
        "tool_calls 5",
        json.dumps(with_message(tool_calls="5")).encode(),
        "error: messages[1].tool_calls: must be a JSON list",
    ),
    (
        "tool_calls a list",
        json.dumps(with_message(tool_calls=[{"id": "a"}])).encode(),
        "error: messages[1].tool_calls: must be text",
    ),
    (
        "not utf-8",
        b'{"format": "tui-agent-conversation", "messages": [{"role": "user", "content": "\xff\xfe"}]}',
        "error: {file} is not UTF-8 text",
    ),
    ("deep", b"[" * 100_000 + b"]" * 100_000, "error: {file} is nested too deeply"),
    (
        "bad path after good rows",
        json.dumps(with_message(attachments=[{"path": "../agent.db"}])).encode(),
        "error: attachment path '../agent.db'",
    ),
]


def counts(db: Path) -> tuple[int, ...]:
    return tuple(
        rows(db, f"SELECT count(*) FROM {table}")[0][0]
        for table in ("conversations", "messages", "attachments", "message_revisions")
    )


@pytest.mark.slow
def test_every_malformed_file_is_one_line_and_writes_nothing(env, tmp_path):
    before = counts(env.vault.db_path)
    running = []
    for index, (name, raw, expected) in enumerate(CORPUS):
        path = tmp_path / f"bad-{index}.json"
        path.write_bytes(raw)
        argv = [*tui_agent_argv(), "--vault", str(env.vault.root), "history", "import", str(path)]
        running.append((name, path, expected, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        if len(running) >= 4 or index == len(CORPUS) - 1:
            for name, path, expected, process in running:
                out, err = process.communicate(timeout=60)
                text = err.decode("utf-8")
                assert process.returncode == 1, (name, text)
                assert text.startswith(expected.format(file=path)), (name, text)
                assert text.count("\n") == 1 and "Traceback" not in text, (name, text)
                assert "\x1b" not in text and out == b"", name
            running = []
    assert counts(env.vault.db_path) == before
    good = tmp_path / "good.json"
    good.write_text(json.dumps(export()))
    done = subprocess.run(
        [*tui_agent_argv(), "--vault", str(env.vault.root), "history", "import", str(good)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert counts(env.vault.db_path)[:2] == (before[0] + 1, before[1] + 2)


@pytest.mark.slow
@pytest.mark.parametrize(
    "tool_calls", ["{not json", "[{}]", "5", '[{"id": "c1", "name": "web_search", "arguments": 5}]']
)
def test_a_stored_bad_row_does_not_break_the_next_turn(env, tool_calls):
    """An assistant row stored by an older import (or any writer) with broken tool_calls: the next
    turn of that conversation runs; the broken calls are left out of the request, with a log line."""
    from tui_agent.core.store import history

    conversation = history.new_conversation("imported")
    history.add_message(conversation.id, "user", "first")
    bad = history.add_message(conversation.id, "assistant", "", tool_calls=tool_calls)
    history.add_message(conversation.id, "web_tool", '{"status": "ok"}', tool_name="web_search", tool_call_id="c1")
    history.add_message(conversation.id, "assistant", "an answer")
    env.fake.script(Reply(text="second answer"), Reply(text="third answer"))
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), "ask", "--conversation"]
    for text, answer in (("again", "second answer"), ("and again", "third answer")):
        result = subprocess.run([*argv, str(conversation.id), text], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert answer in result.stdout
    request = env.fake.chat_requests[-1]["messages"]
    assert [m["role"] for m in request] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert request[2]["content"] == "an answer"
    assert all("tool_calls" not in m and m["role"] != "tool" for m in request)
    log = (env.vault.logs / "agent.log").read_text()
    assert f"message {bad.id}:" in log


async def test_a_stored_attachment_outside_media_is_never_sent(env, tmp_path):
    """A row written by an older import may name any file: the request carries a note, not the file."""
    from helpers import make_loop

    from tui_agent.core import profiles
    from tui_agent.core.store import history
    from tui_agent.core.store.models import Attachment

    profiles.set_field(env.profile, "chat_accepts_images", "yes")  # pixels go with every request
    env.reload_profile()
    secret = env.vault.root / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\nSECRET-BYTES")
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"\x89PNG\r\n\x1a\nOUTSIDE-BYTES")
    conversation = history.new_conversation("old import")
    message = history.add_message(conversation.id, "user", "look")
    for position, path in enumerate(["secret.png", "media/../secret.png", str(outside)]):
        Attachment.create(message=message.id, position=position, path=path, mime="image/png")
    history.add_message(conversation.id, "assistant", "seen")
    good = env.vault.media / "fine.png"
    good.write_bytes(png_bytes())
    history.add_message(conversation.id, "user", "this one is fine", attachments=["media/fine.png"])
    history.add_message(conversation.id, "assistant", "ok")
    env.fake.script(Reply(text="fine"))
    loop = make_loop(env, None)
    try:
        [e async for e in loop.run_turn(conversation.id, "and now?")]
    finally:
        await loop.aclose()
    body = json.dumps(env.fake.chat_requests[-1])
    assert body.count('"type": "image_url"') == 1 and "[image not available: secret.png]" in body  # only fine.png
    assert "U0VDUkVU" not in body and "T1VUU0lERS" not in body  # no base64 of either file
