"""Export a conversation (Markdown with its images, JSON with every field) and import the JSON back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import store_rows
from backends import BOTH_BACKENDS
from cli_fork import tui_agent_argv
from fake_openai import Reply
from media_helpers import remove_picture

pytestmark = BOTH_BACKENDS


def cli(*args, vault, cwd=None, stdin=None):
    argv = [*tui_agent_argv(), *args, "--vault", str(vault)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd, input=stdin)


def make_conversation(env) -> int:
    """A real turn through the loop: a user message, the image tool, the vision follow-up."""
    env.fake.script(
        Reply(
            tool_calls=[
                ("generate_image", json.dumps({"prompt": "a fox", "path": "fox/red.png", "count": 2, "reason": "r"}))
            ]
        ),
        Reply(text="Two foxes, one ```odd``` fence."),
    )
    result = cli("ask", "--new", "draw a fox", vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    return int(store_rows.value("SELECT max(id) FROM conversations"))


def test_markdown_export_copies_images_beside_and_links_them(env, tmp_path):
    conversation_id = make_conversation(env)
    out = tmp_path / "out" / "fox.md"
    result = cli("history", "export", str(conversation_id), "--out", str(out), vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out} and 2 image(s) in fox_files/"
    text = out.read_text()
    assert text.startswith("# draw a fox\n")
    assert "## User\n\ndraw a fox\n" in text
    # The tool call is a collapsible block (seed 002): command, then the raw output, in a fence.
    assert "<details>\n<summary>Tool result · generate_image · ok</summary>\n\n```bash\ngenerate_image {" in text
    assert '"status": "ok"' in text and "</details>" in text
    for name in ("fox_red-1.png", "fox_red-2.png"):
        assert f"![image](fox_files/{name})" in text
        copied = out.parent / "fox_files" / name
        assert copied.read_bytes() == (env.vault.media / "fox" / name.replace("fox_", "")).read_bytes()
    assert "## Assistant\n\nTwo foxes, one ```odd``` fence.\n" in text


def test_markdown_export_default_name_and_missing_image(env, tmp_path):
    conversation_id = make_conversation(env)
    remove_picture(env.vault.root, "media/fox/red-2.png")  # from the database too: gone for good
    result = cli("history", "export", str(conversation_id), vault=env.vault.root, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / f"conversation-{conversation_id}-draw-a-fox.md"
    text = out.read_text()
    assert "![image](" in text and "*(image no longer in the vault)*" in text
    assert result.stdout.strip() == f"wrote {out.name} and 1 image(s) in {out.stem}_files/"


def test_json_export_has_every_stored_field_and_imports_back(env, tmp_path):
    conversation_id = make_conversation(env)
    result = cli("history", "export", str(conversation_id), "--format", "json", "--out", "-", vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == "tui-agent-conversation" and data["conversation"]["id"] == conversation_id
    stored = store_rows.rows("SELECT * FROM messages WHERE conversation_id={p} ORDER BY id", conversation_id)
    assert len(data["messages"]) == len(stored) >= 4
    for exported, row in zip(data["messages"], stored, strict=True):
        for column, value in row.items():
            key = "conversation" if column == "conversation_id" else column
            if key != "conversation":
                assert exported[key] == value, column
    tool = next(m for m in data["messages"] if m["tool_name"] == "generate_image")
    assert [a["path"] for a in tool["attachments"]] == ["media/fox/red-1.png", "media/fox/red-2.png"]

    path = tmp_path / "c.json"
    path.write_text(result.stdout)
    result = cli("history", "import", str(path), vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    new_id = int(result.stdout.split()[-1])
    assert new_id != conversation_id
    again = json.loads(
        cli("history", "export", str(new_id), "--format", "json", "--out", "-", vault=env.vault.root).stdout
    )
    strip = ("id", "created_at", "conversation", "parent_id")  # renumbered; the shape is checked below
    assert [
        {k: v for k, v in m.items() if k not in strip and k not in ("attachments", "revisions")}
        for m in again["messages"]
    ] == [
        {k: v for k, v in m.items() if k not in strip and k not in ("attachments", "revisions")}
        for m in data["messages"]
    ]
    from tui_agent.core.store import history

    assert [m.content for m in history.recent_messages(new_id)] == [
        m.content for m in history.recent_messages(conversation_id)
    ]
    assert [[a["path"] for a in m["attachments"]] for m in again["messages"]] == [
        [a["path"] for a in m["attachments"]] for m in data["messages"]
    ]


def test_import_refuses_paths_outside_media_and_imports_nothing(env, tmp_path):
    conversation_id = make_conversation(env)
    data = json.loads(
        cli("history", "export", str(conversation_id), "--format", "json", "--out", "-", vault=env.vault.root).stdout
    )
    tool = next(m for m in data["messages"] if m["attachments"])
    for hostile in ("../agent.db", "/etc/passwd", "media/../../secret.png", "media/x.txt"):
        tool["attachments"][0]["path"] = hostile
        result = cli("history", "import", "-", vault=env.vault.root, stdin=json.dumps(data))
        assert result.returncode == 1
        assert result.stderr.startswith(f"error: attachment path {hostile!r} is not an image under media/")
    listing = cli("history", "list", vault=env.vault.root).stdout.strip().splitlines()
    assert len(listing) == 1


def test_export_errors_are_one_line(env, tmp_path: Path):
    result = cli("history", "export", "999", vault=env.vault.root)
    assert result.returncode == 1
    assert result.stderr.strip() == "error: no conversation with id 999 (tui-agent history list shows them)"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = cli("history", "import", str(bad), vault=env.vault.root)
    assert result.returncode == 1 and result.stderr.startswith(f"error: {bad} is not JSON")
    bad.write_text(json.dumps({"format": "other"}))
    result = cli("history", "import", str(bad), vault=env.vault.root)
    assert result.returncode == 1 and "not a tui-agent conversation export" in result.stderr


# ------------------------------------------------------ writes only where asked (issue 26.7)
def test_export_refuses_an_existing_file_and_replaces_it_only_with_force(env, tmp_path):
    conversation_id = make_conversation(env)
    for fmt in ("md", "json"):
        out = tmp_path / f"mine.{fmt}"
        out.write_text("my own notes\n")
        args = ("history", "export", str(conversation_id), "--format", fmt, "--out", str(out))
        result = cli(*args, vault=env.vault.root)
        assert result.returncode == 1
        assert result.stderr == f"error: {out} exists (give --force to replace it)\n"
        assert out.read_text() == "my own notes\n"
        result = cli(*args, "--force", vault=env.vault.root)
        assert result.returncode == 0, result.stderr
        assert out.read_text() != "my own notes\n" and not out.is_symlink()
    assert "![image](mine_files/fox_red-1.png)" in (tmp_path / "mine.md").read_text()


@pytest.mark.slow
def test_export_never_follows_a_symlink(env, tmp_path):
    conversation_id = make_conversation(env)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    # A link planted at the default name, a dangling one, one given as --out.
    default = work / f"conversation-{conversation_id}-draw-a-fox.md"
    default.symlink_to(victim)
    result = cli("history", "export", str(conversation_id), vault=env.vault.root, cwd=work)
    assert result.returncode == 1 and "exists" in result.stderr
    (work / f"conversation-{conversation_id}-draw-a-fox.json").symlink_to(tmp_path / "nowhere.json")
    result = cli("history", "export", str(conversation_id), "--format", "json", vault=env.vault.root, cwd=work)
    assert result.returncode == 1 and not (tmp_path / "nowhere.json").exists()
    link = work / "given.md"
    link.symlink_to(victim)
    result = cli("history", "export", str(conversation_id), "--out", str(link), vault=env.vault.root)
    assert result.returncode == 1
    # --force replaces the link itself, never what it points to.
    result = cli("history", "export", str(conversation_id), "--out", str(link), "--force", vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    assert not link.is_symlink() and link.read_text().startswith("# draw a fox")
    assert victim.read_text() == "precious\n"
    # The images' folder beside the Markdown, or an image in it, planted as a link.
    (work / "pics_files").symlink_to(elsewhere)
    result = cli("history", "export", str(conversation_id), "--out", str(work / "pics.md"), vault=env.vault.root)
    assert result.returncode == 1 and "pics_files is a symlink" in result.stderr
    (work / "more_files").mkdir()
    (work / "more_files" / "fox_red-1.png").symlink_to(victim)
    for extra in ((), ("--force",)):
        result = cli(
            "history", "export", str(conversation_id), "--out", str(work / "more.md"), *extra, vault=env.vault.root
        )
        assert result.returncode == 1 or not (work / "more_files" / "fox_red-1.png").is_symlink(), result.stderr
    assert victim.read_text() == "precious\n" and list(elsewhere.iterdir()) == []
    assert (work / "more_files" / "fox_red-1.png").read_bytes() == (env.vault.media / "fox" / "red-1.png").read_bytes()


def test_markdown_export_keeps_html_and_controls_as_text(env, tmp_path):
    from markdown_it import MarkdownIt

    from tui_agent.core.store import history

    conversation = history.new_conversation("t<img src=x onerror=alert(1)>\x1b]0;T\x07")
    history.add_message(conversation.id, "user", "show me <b>bold</b> & `<i>code</i>`")
    reply = (
        "Here:</details><script>alert(1)</script>\n\n<div onclick=x>block html</div>\n\n"
        "```html\n<p>kept as code</p>\n```\n\nand \x1b]52;c;cHduZWQ=\x07 \\`<u>x</u>` end"
    )
    history.add_message(conversation.id, "assistant", reply, status="cancelled</em><script>")
    history.add_message(
        conversation.id,
        "web_tool",
        "</details><script>",
        tool_name="web</summary><script>",
        tool_call_id="c1",
        tool_arguments="{}",
    )
    out = tmp_path / "x.md"
    result = cli("history", "export", str(conversation.id), "--out", str(out), vault=env.vault.root)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "\x1b" not in text and "\x07" not in text and "␛]52;c;" in text
    assert "Here:&lt;/details&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "```html\n<p>kept as code</p>\n```" in text and "`<i>code</i>`" in text
    assert "show me &lt;b&gt;bold&lt;/b&gt; &amp; " in text
    assert "\\`&lt;u&gt;x&lt;/u&gt;`" in text  # an escaped backtick opens no code span
    rendered = MarkdownIt("commonmark", {"html": True}).render(text)
    assert "<script" not in rendered and "<img" not in rendered and "<div" not in rendered and "<u>" not in rendered
    assert rendered.count("<details>") == rendered.count("</details>") == 1
    assert rendered.count("<summary>") == rendered.count("</summary>") == 1
    assert "&lt;p&gt;kept as code&lt;/p&gt;" in rendered  # the code block shows its HTML as text
