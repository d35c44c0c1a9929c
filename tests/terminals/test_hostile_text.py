"""One hostile string through every widget and command that shows text (issue 26.2).

The string sets the window title (OSC 0), writes the clipboard (OSC 52), clears the screen (CSI),
ends a bracketed paste (``ESC[201~``), and carries C1 controls, bidi overrides and BEL. It is put
everywhere stored or remote text can come from: a conversation's title, messages, a code block's
info string, reasoning, a tool's name, arguments and result, an imported status, an error row,
the log, a profile, an MCP server's stderr and its tool names and descriptions. Checked:

- every CLI command's output bytes hold no ESC, no C1 control and no BEL;
- the app in a real tmux (own socket): the pane title and the paste buffers are unchanged after
  every screen was opened (sidebar, tools, thinking, message menu, log), the screen shows the
  visible form; a copy puts text on the clipboard with no control character and no paste end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from cli_fork import tui_agent_argv
from fake_openai import Reply
from mcp_helpers import HOSTILE_SERVER, server_command
from mcp_servers.hostile_server import HOSTILE
from pilot_helpers import running, until
from tmux_helpers import Tmux, quit_app, tmux_available

from tui_agent.core import profiles
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store import history
from tui_agent.core.store.models import MessageRevision

ESC, BEL = "\x1b", "\x07"
CODE_INFO = f"py{ESC}]0;MENU-TITLE{BEL}{ESC}]52;c;Zm9v{BEL}"
UNSAFE_BYTES = re.compile(rb"\x1b|\x07|\xc2[\x80-\x9f]")  # ESC, BEL, a C1 control in UTF-8


def add_server(name: str, *flags: str) -> None:
    command, args = server_command(HOSTILE_SERVER, *flags)
    mcp_config.add_server(
        mcp_config.ServerConfig(name=name, transport="stdio", command=command, args=args, policy="auto")
    )


def hostile_vault(env) -> int:
    """Every place stored text comes from, filled with HOSTILE; returns the conversation's id."""
    history.new_conversation(f"other {HOSTILE}")
    conversation = history.new_conversation(f"title {HOSTILE}")
    history.add_message(conversation.id, "user", f"first {HOSTILE}")
    history.add_message(conversation.id, "error", f"error row {HOSTILE}")
    history.add_message(conversation.id, "user", f"second {HOSTILE}")
    call = {"id": "c1", "name": f"web{HOSTILE}", "arguments": json.dumps({"query": HOSTILE})}
    history.add_message(conversation.id, "assistant", "", tool_calls=json.dumps([call]))
    history.add_message(
        conversation.id,
        "web_tool",
        json.dumps({"status": "ok", "data": {"text": HOSTILE}}),
        tool_name=f"web{HOSTILE}",
        tool_call_id="c1",
        tool_arguments=json.dumps({"query": HOSTILE}),
    )
    reply = f"reply {HOSTILE}\n\n```{CODE_INFO}\nprint('{HOSTILE}')\n```\n\nlast line"
    message = history.add_message(conversation.id, "assistant", reply, status=f"cancelled {HOSTILE}")
    history.update_message(message, reasoning=f"thought {HOSTILE}")
    MessageRevision.create(message=message.id, content=f"before {HOSTILE}", reason=f"edited {HOSTILE}")
    profiles.set_field(env.profile, "system_prompt", f"prompt {HOSTILE}")
    add_server("badmcp", "--stderr-exit")
    add_server("evilmcp")
    with open(env.vault.log_file, "a", encoding="utf-8") as log:
        log.write(f"a log line {HOSTILE}\n")
    return int(conversation.id)


def run_cli(env, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [*tui_agent_argv(), "--vault", str(env.vault.root), *args]
    return subprocess.run(argv, capture_output=True, timeout=90, input=stdin)


@pytest.mark.slow
def test_no_command_prints_a_control_character(env, tmp_path):
    conversation_id = hostile_vault(env)
    env.fake.script(Reply(text=f"<think>reasoning {HOSTILE}</think>answer {HOSTILE}"))
    exported = run_cli(env, "history", "export", str(conversation_id), "--format", "json", "--out", "-")
    commands = [
        ("history", "list"),
        ("history", "search", "first"),
        ("history", "revisions"),
        ("profile", "show"),
        ("profile", "list"),
        ("mcp", "list"),
        ("mcp", "test", "evilmcp"),
        ("mcp", "test", "badmcp"),
        ("ask", "--conversation", str(conversation_id), "hi"),
        ("history", "import", "-"),
    ]
    seen = b""
    for command in commands:
        result = run_cli(env, *command, stdin=exported.stdout if command[-1] == "-" else None)
        output = result.stdout + result.stderr
        assert "Traceback" not in output.decode("utf-8", "replace"), (command, output)
        assert not UNSAFE_BYTES.search(output), (command, output)
        seen += output
        if command[:2] == ("history", "import"):  # the JSON export reads back (its C1 escapes too)
            assert result.returncode == 0, output
    assert exported.returncode == 0 and not UNSAFE_BYTES.search(exported.stdout)
    assert json.loads(exported.stdout)["conversation"]["title"] == f"title {HOSTILE}"  # JSON keeps it exact
    text = seen.decode("utf-8")
    for shown in ("␛]0;PWNED-TITLE␇", "<9B>2J", "<U+202E>evil", "␛[201~echo pwned"):
        assert shown in text
    assert "evil␛]0;TOOL-TITLE␇" in text  # mcp test: the tool's name
    assert "reasoning T␛]0;PWNED-TITLE␇" in text  # ask: the reasoning on stderr


@pytest.mark.slow
def test_the_app_draws_hostile_text_only_as_text(env, tmp_path):
    tmux_available()
    hostile_vault(env)
    tmux = Tmux(tmp_path)
    tmux.session = "hostile"
    try:
        tmux("new-session", "-d", "-s", tmux.session, "-x", "140", "-y", "45", "sleep 600")
        tmux("set-option", "-g", "set-clipboard", "on")  # an OSC 52 would land in the buffers
        tmux("set-option", "-g", "allow-rename", "on")
        tmux("set-option", "-g", "allow-passthrough", "on")
        title = tmux.title()
        assert tmux.buffers() == ""
        command = f"cd {tmp_path} && TUI_AGENT_VAULT={env.vault.root} TERM=xterm-256color {sys.executable} -m tui_agent"
        tmux("respawn-pane", "-k", "-t", tmux.session, command)
        screens = [tmux.wait_for("last line")]

        def key(*keys: str) -> None:
            tmux("send-keys", "-t", tmux.session, *keys)

        def gone(text: str) -> None:
            deadline = time.monotonic() + 20
            while text in tmux.screen():
                assert time.monotonic() < deadline, f"{text!r} stayed on screen"
                time.sleep(0.1)

        def settle(text: str) -> None:
            screens.append(tmux.wait_for(text))
            assert tmux.title() == title, screens[-1]
            assert tmux.buffers() == "", screens[-1]

        settle("badmcp")  # the MCP failure's notice (the server's stderr line)
        key("C-b")
        settle("MCP servers")
        key("C-b")
        key("C-o")
        settle("command")
        key("C-o")
        key("M-Up")
        settle("Actions")
        key("Enter")
        settle("Copy code block 1")
        key("Escape")
        gone("Message actions")
        key("C-l")
        settle("a log line")
        key("Escape")
        gone("a log line")
        settle("last line")
        screen = "\n".join(screens)
        for shown in ("␛]0;PWNED-TITLE␇", "<9B>2J", "<U+202E>evil", "␛]0;MENU-TITLE␇"):
            assert shown in screen, shown
        assert ESC not in screen and "\x9b" not in screen and "\x9d" not in screen

        # Copy the reply: the clipboard gets text, no control character, no end of a bracketed paste.
        key("M-Up")
        settle("Actions")
        key("c")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not tmux.buffers():
            time.sleep(0.1)
        names = [line.split(":")[0] for line in tmux.buffers().splitlines()]
        assert names, "nothing was copied"
        for name in names:
            copied = subprocess.run(
                ["tmux", "-L", tmux.socket, "show-buffer", "-b", name], capture_output=True, timeout=20
            ).stdout
            assert b"reply T]0;PWNED-TITLE" in copied, copied
            assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", copied), copied
        assert tmux.title() == title
        quit_app(tmux)
    finally:
        tmux.kill()


@pytest.mark.slow
async def test_every_widget_of_the_hostile_conversation_renders_text_only(env):
    """The same vault on a Pilot screen, every collapsible open (thinking, tool blocks), the
    sidebar shown: no widget renders a control character or a bidi override."""
    from pilot_helpers import screen_text
    from textual.widgets import Collapsible

    hostile_vault(env)
    async with running(env, size=(140, 60)) as (app, pilot):
        await pilot.press("ctrl+b")
        await until(pilot, lambda: app.query("Collapsible"))
        for block in app.query(Collapsible):
            block.collapsed = False
        shown = lambda: "thought T␛]0;PWNED-TITLE␇" in screen_text(app) and "<U+202E>evil" in screen_text(app)  # noqa: E731
        await until(pilot, shown, what="the open blocks drawn")
        screen = screen_text(app)
        bad = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
        assert not bad.search(screen), screen
        field = app.query_one("#field-system_prompt")
        field.scroll_visible(animate=False)  # the profile's fields in the sidebar: a TextArea draws raw
        field.focus()
        # Scrolled into view and drawn (a loaded machine draws it later than a fixed pause).
        await until(pilot, lambda: "prompt T␛]0;PWNED-TITLE␇" in screen_text(app), what="the prompt field drawn")
        screen = screen_text(app)
        assert not bad.search(screen), screen
        app.conversation_view.composer.focus()  # leaving the field unchanged does not save the visible form over the value
        await pilot.pause(0.2)
        assert profiles.active_profile().system_prompt == f"prompt {HOSTILE}"
        await pilot.press("ctrl+up")  # recall an earlier message into the composer
        await until(pilot, lambda: "second T]0;PWNED-TITLE" in app.conversation_view.composer.text, what="no recall")
        recalled = app.conversation_view.composer.text  # the clipboard's rule: controls but tab and newline removed
        assert "second T]0;PWNED-TITLE" in recalled and not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", recalled)
        for widget in app.screen.query("*"):
            rendered = str(widget.render()) if hasattr(widget, "render") else ""
            assert not bad.search(rendered), (widget, rendered)
