"""web_search against a SearXNG-shaped loopback server; every slash command through the loop."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fake_openai import POLL_S, Reply, png_bytes
from helpers import done, rows, run_turn

from tui_agent.core import events as ev
from tui_agent.core import profiles, slash
from tui_agent.core.tools.base import ToolContext
from tui_agent.core.tools.registry import default_registry


class _Files(BaseHTTPRequestHandler):
    """Serves SearXNG JSON at /search and scripted files at other paths."""

    routes: dict[str, tuple[int, str, bytes]] = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/search":
            query = self.path.split("q=")[1].split("&")[0]
            results = [
                {"title": f"Result {i} for {query}", "url": f"https://example.org/{i}", "content": f"snippet {i}"}
                for i in range(12)
            ]
            body = json.dumps({"query": query, "results": results}).encode()
            status, kind = 200, "application/json"
        else:
            status, kind, body = self.routes.get(path, (404, "text/plain", b"missing"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def http_files():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Files.routes
    server.shutdown()
    server.server_close()
    _Files.routes.clear()


async def search(env, **arguments):
    return await default_registry().execute("web_search", arguments, ToolContext(env.vault, env.reload_profile()))


async def test_searxng_results_are_capped(env, http_files):
    base, _ = http_files
    profiles.set_field(env.profile, "web_search_url", base)
    profiles.set_field(env.profile, "web_search_backend", "searxng")
    result = await search(env, query="textual tui")
    assert result.is_ok
    assert len(result.data["results"]) == 5
    assert result.data["results"][0] == {
        "title": "Result 0 for textual+tui",
        "url": "https://example.org/0",
        "snippet": "snippet 0",
    }
    result = await search(env, query="x", max_results=50)
    assert len(result.data["results"]) == 10


async def test_dead_searxng_is_a_clear_error(env):
    profiles.set_field(env.profile, "web_search_url", "http://127.0.0.1:9")
    profiles.set_field(env.profile, "web_search_backend", "searxng")
    result = await search(env, query="anything")
    assert result.error == "cannot reach SearXNG at http://127.0.0.1:9/search: ConnectError"


def test_slash_parsing():
    assert slash.parse("hello") is None
    assert slash.parse("//not a command") is None
    command = slash.parse("/generate-image 3 a castle at dusk")
    assert command.tool == "generate_image" and command.arguments["count"] == 3
    assert command.arguments["prompt"] == "a castle at dusk"
    assert command.arguments["path"].startswith("imagine/a-castle-at-dusk-")
    assert slash.parse("/attach http://x/y.png what is it").attach == "http://x/y.png"
    with pytest.raises(slash.SlashError, match="unknown command /frobnicate"):
        slash.parse("/frobnicate")
    with pytest.raises(slash.SlashError, match="usage: /search <query>"):
        slash.parse("/search")


async def test_imagine_runs_the_tool_then_the_vision_follow_up(env):
    env.fake.script(Reply(text="A fox with a bushy tail."))
    events = await run_turn(env, "/imagine a red fox")
    assert done(events).status == "complete"
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.role == "image_tool" and len(finished.result.data["paths"]) == 2
    (request,) = env.fake.chat_requests
    assert request["model"] == "vision-model"
    assert [p["type"] for p in request["messages"][-1]["content"]] == ["text", "image_url", "image_url"]
    stored = rows(env.vault.db_path, "SELECT role, model FROM messages ORDER BY id")
    assert stored == [
        ("user", None),
        ("assistant", "user-command"),
        ("image_tool", None),
        ("assistant", "vision-model"),
    ]


async def test_generate_image_with_count(env):
    events = await run_turn(env, "/generate-image 3 tiny robots")
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert len(finished.result.data["paths"]) == 3


async def test_search_and_sql_and_show(env, http_files):
    base, _ = http_files
    profiles.set_field(env.profile, "web_search_url", base)
    profiles.set_field(env.profile, "web_search_backend", "searxng")
    events = await run_turn(env, "/search python textual")
    conversation = done(events).conversation_id
    assert next(e for e in events if isinstance(e, ev.ToolFinished)).role == "web_tool"
    assert env.fake.chat_requests[-1]["model"] == "chat-model"
    assert "Result 0 for python+textual" in env.fake.chat_requests[-1]["messages"][-1]["content"]

    events = await run_turn(env, "/sql SELECT count(*) AS n FROM messages", conversation)
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.role == "memory_tool" and finished.result.data["rows"][0][0] >= 4

    (env.vault.media / "pic.png").write_bytes(png_bytes())
    events = await run_turn(env, "/show media/pic.png", conversation)
    finished = next(e for e in events if isinstance(e, ev.ToolFinished))
    assert finished.result.data["path"] == "media/pic.png" and finished.result.images == ["media/pic.png"]
    events = await run_turn(env, "/show media/nope.png", conversation)
    assert next(e for e in events if isinstance(e, ev.ToolFinished)).result.error == "not found: media/nope.png"


async def test_attach_url_downloads_into_uploads(env, http_files):
    base, routes = http_files
    routes["/fox.png"] = (200, "image/png", png_bytes((10, 200, 10)))
    events = await run_turn(env, f"/attach {base}/fox.png what colour is this?")
    assert done(events).status == "complete"
    stored = rows(env.vault.db_path, "SELECT path FROM attachments")
    assert stored[0][0].startswith("media/uploads/fox-") and (env.vault.root / stored[0][0]).is_file()
    content = env.fake.chat_requests[-1]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what colour is this?"}
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        ((200, "text/html", b"<html>"), "is text/html, not an image"),
        ((200, "image/png", b"not really a png"), "not a valid image"),
        ((404, "text/plain", b"gone"), "answered HTTP 404"),
        ("bomb", "decompression bomb"),
    ],
)
@pytest.mark.slow
async def test_attach_refuses_bad_downloads(env, http_files, route, expected):
    base, routes = http_files
    if route == "bomb":
        from PIL import Image

        buffer = io.BytesIO()
        Image.new("1", (20000, 20000)).save(buffer, "PNG")
        route = (200, "image/png", buffer.getvalue())
    routes["/x.png"] = route
    events = await run_turn(env, f"/attach {base}/x.png hi")
    error = next(e for e in events if isinstance(e, ev.ErrorEvent))
    assert expected in error.message
    assert rows(env.vault.db_path, "SELECT count(*) FROM messages") == [(0,)]
    assert [p.name for p in env.vault.uploads.iterdir()] == []
    assert env.fake.chat_requests == []


async def test_new_and_help_make_no_request(env):
    events = await run_turn(env, "/help")
    assert isinstance(events[0], ev.Notice) and "/imagine <prompt>" in events[0].text
    events = await run_turn(env, "/new")
    assert isinstance(events[0], ev.ConversationChanged)
    events = await run_turn(env, "/bogus")
    assert "unknown command /bogus" in events[0].message
    assert env.fake.chat_requests == []
