"""No terminal escape from text we did not write reaches the user's terminal (issue 10.2).

Unit tests of the mapping, ``ask`` in a subprocess, the app on a real Pilot screen, and the real
console script in tmux: a model reply full of escape sequences must not change tmux's pane title,
write tmux's paste buffers or clear the screen, neither live nor when the conversation is reopened.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import Reply
from pilot_helpers import running, screen_text, until
from tmux_helpers import Tmux, quit_app, tmux_available

from tui_agent.core.store import history
from tui_agent.core.textsafe import clipboard_text, has_controls, revealed, visible
from tui_agent.ui.widgets.bubbles import AssistantBubble, ErrorCard

ESC, BEL = "\x1b", "\x07"
SIXEL = f"{ESC}Pq#0;2;0;0;0#1;2;100;100;0#1~~@@vv@@~~@@~~$#0??}}GG}}??}}??-{ESC}\\"
KITTY = f"{ESC}_Gf=100,a=T;iVBORw0KGgo={ESC}\\"
HOSTILE = (
    f"Title{ESC}]0;PWNED-TITLE{BEL} clip{ESC}]52;c;cHduZWQ={BEL} clear{ESC}[2J{ESC}[H "
    f"link{ESC}]8;;https://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\ sixel{SIXEL} kitty{KITTY} "
    f"c1\x9b2J end-of-reply"
)


def test_visible_maps_every_control_but_newline_and_tab():
    assert visible("a\nb\tc") == "a\nb\tc"
    assert visible(f"{ESC}]0;t{BEL}") == "␛]0;t␇"
    assert visible("\x9b2J") == "<9B>2J"
    assert visible("\x7f\r\x00") == "␡␍␀"
    assert not has_controls(visible(HOSTILE)) and has_controls(HOSTILE)
    assert all(ord(c) >= 0x20 or c in "\n\t" for c in visible("".join(map(chr, range(0x100)))))


@pytest.mark.slow
def test_ask_escapes_stdout_and_stderr_unless_raw(env):
    env.fake.script(
        Reply(text=HOSTILE),
        Reply(text="x", status=400, error_message=f"bad{ESC}]0;ERR-TITLE{BEL}request"),
        Reply(text=HOSTILE),
    )
    argv = [sys.executable, "-m", "tui_agent", "--vault", str(env.vault.root), "ask", "--new", "hi"]
    safe = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert safe.returncode == 0, safe.stderr
    assert ESC not in safe.stdout and "\x9b" not in safe.stdout
    assert "␛]0;PWNED-TITLE␇" in safe.stdout and "end-of-reply" in safe.stdout
    failed = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert ESC not in failed.stderr and "␛]0;ERR-TITLE␇" in failed.stderr
    raw = subprocess.run([*argv[:-2], "--raw", "--new", "hi"], capture_output=True, text=True, timeout=60)
    assert f"{ESC}]0;PWNED-TITLE{BEL}" in raw.stdout


async def test_the_app_never_renders_raw_controls(env):
    async with running(env, Reply(text=HOSTILE, chunk_size=5), Reply(status=400, error_message=f"no{ESC}[2Jpe")) as (
        app,
        pilot,
    ):
        app.conversation_view.composer.load_text("hi")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns)
        app.conversation_view.composer.load_text("again")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turns and app.conversation_view.chat_log.query(ErrorCard))
        await pilot.pause(0.2)
        (bubble, *_) = app.conversation_view.chat_log.query(AssistantBubble)
        assert bubble.text == HOSTILE  # stored and kept as it came
        card = str(app.conversation_view.chat_log.query(ErrorCard).last().render())
        assert "no␛[2Jpe" in card
        conversation = history.get_conversation(app.conversation_id)
        history.rename_conversation(conversation.id, f"t{ESC}]0;T{BEL}")
        await app.conversation_view.open_conversation(conversation.id)  # reopened: rendered from the database
        await pilot.pause(0.2)
        assert (
            "␛]0;PWNED-TITLE␇"
            in app.conversation_view.chat_log.query(AssistantBubble).first().query_one("Markdown").source
        )
        assert "␛]0;T␇" in app.sub_title
        for text in (str(w.render()) for w in app.screen.query("*") if hasattr(w, "render")):
            assert ESC not in text and "\x9b" not in text and BEL not in text


def start_app(tmux: Tmux, env, tmp_path: Path) -> None:
    command = f"cd {tmp_path} && TUI_AGENT_VAULT={env.vault.root} TERM=xterm-256color {sys.executable} -m tui_agent"
    tmux("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
    tmux("set-option", "-t", tmux.session, "set-clipboard", "on")  # OSC 52 would land in the buffers
    tmux("set-option", "-t", tmux.session, "allow-rename", "on")
    tmux("set-option", "-t", tmux.session, "allow-passthrough", "on")


@pytest.mark.slow
def test_escapes_in_a_reply_do_nothing_in_tmux(env, tmp_path):
    tmux_available()
    env.fake.script(Reply(text=f"first line stays\n\n{HOSTILE}"))
    tmux = Tmux(tmp_path)
    try:
        start_app(tmux, env, tmp_path)
        tmux.wait_for("Message (Enter sends")
        title, buffers = tmux.title(), tmux.buffers()
        assert "PWNED" not in title
        tmux("send-keys", "-t", tmux.session, "-l", "say it")
        tmux("send-keys", "-t", tmux.session, "Enter")
        screen = tmux.wait_for("end-of-reply")
        time.sleep(0.5)
        screen = tmux.screen()
        assert "first line stays" in screen and "say it" in screen  # not cleared
        assert "␛]0;PWNED-TITLE␇" in screen
        assert tmux.title() == title and tmux.buffers() == buffers == ""
        quit_app(tmux)

        start_app(tmux, env, tmp_path)  # reopening the conversation renders the stored reply again
        screen = tmux.wait_for("end-of-reply")
        time.sleep(0.5)
        screen = tmux.screen()
        assert "first line stays" in screen and "PWNED" not in tmux.title()
        assert tmux.buffers() == ""
        quit_app(tmux)
    finally:
        tmux.kill()


async def test_file_names_in_the_attach_picker_are_shown_safely(env, tmp_path, monkeypatch):
    from tui_agent.ui.screens.dialogs import AttachScreen, ImageTree

    (tmp_path / f"evil{ESC}]0;T{BEL}.png").write_bytes(b"x")
    async with running(env) as (app, pilot):
        app.push_screen(AttachScreen(tmp_path))
        await pilot.pause(0.5)
        tree = app.screen.query_one(ImageTree)
        labels = [tree.render_label(node, tree.rich_style, tree.rich_style).plain for node in tree.root.children]
        assert any("evil␛]0;T" in label for label in labels), labels  # Rich itself drops BEL
        assert not any(ESC in label or BEL in label for label in labels)


@pytest.mark.slow
async def test_tool_arguments_results_and_approval_questions_are_shown_safely(env):
    import json

    from tui_agent.ui.screens.dialogs import ApprovalScreen

    conversation = history.new_conversation("tools")
    history.add_message(conversation.id, "user", "look")
    history.add_message(
        conversation.id,
        "web_tool",
        json.dumps({"status": "error", "error": f"SearXNG said {ESC}]0;ERR{BEL}no"}),
        tool_name="web_search",
        tool_call_id="c1",
        tool_arguments=f'{{"query": "q{ESC}]0;ARGS{BEL}"}}',  # not valid JSON: shown as it came
        status="error",
    )
    async with running(env) as (app, pilot):
        await pilot.press("ctrl+o")  # expand: the command and the raw output are on screen
        await until(pilot, lambda: all(shown in screen_text(app) for shown in ("␛]0;ARGS␇", "␛]0;ERR␇")))
        assert ESC not in screen_text(app)
        app.push_screen(ApprovalScreen(f"memory{ESC}]0;T{BEL}", f"change 1 row{ESC}[2J?"))
        await until(pilot, lambda: "change 1 row␛[2J?" in screen_text(app))
        assert ESC not in screen_text(app)


def test_bidi_invisible_and_clipboard_forms():
    """Bidi overrides are made visible everywhere; ``revealed`` shows every invisible character;
    copied text keeps only tab and newline of the controls, so it cannot end a bracketed paste."""
    assert visible("a\u202eb\u2066c") == "a<U+202E>b<U+2066>c"
    assert visible("a\u200bb") == "a\u200bb" and revealed("a\u200bb\u200fc\U000e0041") == "a<U+200B>b<U+200F>c<U+E0041>"
    assert revealed(f"{ESC}x\u202e") == "␛x<U+202E>"
    copied = clipboard_text(f"ls\r\n{ESC}[201~rm -rf ~\x9b\x07\tend\n")
    assert copied == "ls\n[201~rm -rf ~\tend\n"
    from tui_agent.ui.clipboard import copy_text

    written: list[str] = []
    report = copy_text(f"a{ESC}[201~b", written.append, environ={}, run_tool=lambda argv, text: None)
    import base64

    assert base64.b64decode(written[0][len(f"{ESC}]52;c;") : -1]) == b"a[201~b" and report.chars == 7
