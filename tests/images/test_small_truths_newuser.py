"""Small truths a new user met (issue 37 item 4): the carousel is one Shift+Tab away with its focus
shown; an MCP server named by command is found beside the app's own Python; PageUp after a search
jump goes on up through pictures and tool blocks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mcp_helpers import FIXTURE
from repo_paths import ROOT
from test_carousel import image_conversation, make, settle

from tui_agent.ui.widgets.carousel import ImageCarousel


async def test_one_shift_tab_from_the_composer_focuses_the_carousel_and_shows_it(env):
    image_conversation(env)
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        carousel = app.conversation_view.chat_log.query_one(ImageCarousel)
        await settle(pilot, carousel, "1 / 2")
        assert app.focused is app.conversation_view.composer
        unfocused = carousel.styles.background
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused is carousel, app.focused
        assert carousel.styles.background != unfocused  # its :focus style: the user sees where the keys go
        await pilot.press("right")
        await settle(pilot, carousel, "2 / 2")


def test_an_mcp_server_named_by_command_is_found_beside_the_apps_own_python(env, tmp_path):
    """`pip install mcp-server-x` into the app's venv puts the command in the venv's bin/; run as
    `.venv/bin/tui-agent` without activating the venv, that bin/ is not on PATH. A venv of the
    test's own (its Python reaching this checkout's packages) holds the server's command."""
    app = tmp_path / "app"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(app)], check=True)
    (site,) = app.glob("lib/python*/site-packages")
    (site / "checkout.pth").write_text(f"{ROOT}\n{next(iter(sysconfig_purelib()))}\n")
    server = app / "bin" / "fixture-mcp-server"
    server.write_text(
        f"#!{app / 'bin' / 'python'}\nimport runpy, sys\nsys.argv[0] = {str(FIXTURE)!r}\n"
        f"runpy.run_path({str(FIXTURE)!r}, run_name='__main__')\n"
    )
    server.chmod(0o755)
    python = str(app / "bin" / "python")
    plain = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    plain["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # no venv's bin/ on it
    vault = str(env.vault.root)

    def tui(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [python, "-m", "tui_agent", "--vault", vault, *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=plain, stdin=subprocess.DEVNULL)

    added = tui("mcp", "add", "fx", "--", "fixture-mcp-server", "stdio")
    assert added.returncode == 0, added.stderr
    tested = tui("mcp", "test", "fx")
    assert tested.returncode == 0, tested.stderr
    # A command found nowhere is still one clear line.
    assert tui("mcp", "add", "gone", "--", "no-such-mcp-server-binary").returncode == 0
    gone = tui("mcp", "test", "gone")
    assert gone.returncode == 1 and "command not found: no-such-mcp-server-binary" in gone.stderr


def sysconfig_purelib() -> list[str]:
    import sysconfig

    return [sysconfig.get_paths()["purelib"]]


@pytest.mark.slow
async def test_pageup_after_a_search_jump_goes_all_the_way_up_through_pictures_and_tool_blocks(env):
    """The palette's search jumps into the middle of a long conversation with pictures and tool
    results; PageUp (from the composer, as a user presses it) then goes on up to the first message,
    page after page, never stopping at a tool block."""
    import json

    from fake_openai import png_bytes

    from tui_agent.core.store import history
    from tui_agent.ui.widgets.chat_log import PAGE
    from tui_agent.ui.widgets.log_release import message_id_of

    conversation = history.new_conversation("long, with pictures")
    ids: list[int] = []
    for turn in range(2 * PAGE):
        ids.append(history.add_message(conversation.id, "user", f"draw number {turn}").id)
        path = env.vault.media / f"turns/picture-{turn}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes((turn * 9 % 255, 90, 160), (64, 40)))
        arguments = json.dumps({"prompt": f"n{turn}", "path": f"turns/picture-{turn}.png", "count": 1, "reason": "r"})
        output = json.dumps({"status": "ok", "data": {"paths": [f"media/turns/picture-{turn}.png"]}})
        ids.append(
            history.add_message(
                conversation.id,
                "image_tool",
                output,
                attachments=[f"media/turns/picture-{turn}.png"],
                tool_name="generate_image",
                tool_call_id=f"c{turn}",
                tool_arguments=arguments,
            ).id
        )
        ids.append(history.add_message(conversation.id, "assistant", f"here is number {turn}").id)
    app = make(env)
    async with app.run_test(size=(120, 40)) as pilot:
        log = app.conversation_view.chat_log
        await app.jump_to_message(conversation.id, ids[len(ids) // 2 + 1])  # a hit in a tool result
        # Straight to the top of what is mounted (a flick of the wheel, End's opposite) while the
        # page below the hit is still loading; then PageUp as a user presses it.
        await pilot.pause(0)
        log.scroll_home(animate=False)
        await pilot.pause(0.5)
        for _ in range(100):
            await pilot.pause(0.05)
            await pilot.press("pageup")
            if not log.has_older and log.scroll_y == 0:
                break
        mounted = [found for child in log.children if (found := message_id_of(child)) is not None]
        assert not log.has_older and log.scroll_y == 0, (log.has_older, log.scroll_y, mounted[:3])
        assert mounted[0] == ids[0]
