"""``core/openai_import``: openai without its unused type modules, and nothing else changed.

Each check runs in a fresh interpreter: this test process may have imported openai already (the
hook then stays out of the way, see ``install``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply

# Every public name of every package under openai.types and openai.lib, described by what it is (a class by its
# defining module and name, a module by its name, anything else by its type and repr).
DESCRIBE = """
import json, sys
from pathlib import Path
{setup}
import openai
top = Path(openai.__file__).parent
packages = sorted(
    "openai." + ".".join(p.parent.relative_to(top).parts)
    for root in (top / "types", top / "lib")
    for p in root.rglob("__init__.py")
)
def describe(value):
    if isinstance(value, type(sys)):
        return "module " + value.__name__
    name = getattr(value, "__qualname__", None)
    module = getattr(value, "__module__", None)
    if isinstance(name, str) and isinstance(module, str):
        return f"{{type(value).__name__}} {{module}}.{{name}}"
    return f"{{type(value).__name__}} {{value!r}}"[:200]
found = {{}}
for name in packages:
    package = __import__(name, fromlist=["_"])
    public = getattr(package, "__all__", None) or [n for n in vars(package) if not n.startswith("_")]
    found[name] = {{n: describe(getattr(package, n)) for n in public}}
print(json.dumps(found))
"""


def run(code: str, timeout: float = 120) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_chat_client_loads_without_the_rest_of_the_api():
    code = (
        "import json, sys\n"
        "from tui_agent.core.openai_import import load\n"
        "openai = load()\n"
        "client = openai.AsyncOpenAI(base_url='http://127.0.0.1:9/v1', api_key='x', max_retries=0)\n"
        "client.chat.completions.with_streaming_response\n"
        "names = [m for m in sys.modules if m.startswith('openai.types.')]\n"
        "print(json.dumps([len(names), 'openai.types.responses.response' in sys.modules, 'aiohttp' in sys.modules]))"
    )
    loaded, responses, aiohttp = json.loads(run(code))
    eager = json.loads(
        run("import json, sys, openai\nprint(len([m for m in sys.modules if m.startswith('openai.types.')]))")
    )
    assert not responses and not aiohttp  # the Responses API's models; the aiohttp transport
    assert loaded < eager / 4, (loaded, eager)


@pytest.mark.slow
def test_every_type_name_is_the_same_as_with_a_plain_import():
    """Each name a plain import binds (its submodules and ``from __future__`` aside) is there, and is
    the same object; each name the lazy package lists resolves."""
    lazy = json.loads(run(DESCRIBE.format(setup="from tui_agent.core.openai_import import install\ninstall()")))
    eager = json.loads(run(DESCRIBE.format(setup="")))
    assert lazy.keys() == eager.keys()
    assert len(eager) > 20  # the walk found the packages
    differences = {}
    for package, names in eager.items():
        bound = {n: d for n, d in names.items() if not d.startswith(("module ", "_Feature "))}
        seen = {n: lazy[package].get(n, "missing") for n in bound}
        if seen != bound:
            differences[package] = sorted(set(seen.items()) ^ set(bound.items()))[:10]
    assert differences == {}
    assert sum(len(names) for names in eager.values()) > 1000


def test_an_unknown_name_is_still_an_attribute_error():
    code = (
        "from tui_agent.core.openai_import import load\n"
        "openai = load()\n"
        "try:\n"
        "    openai.types.NoSuchModel\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    assert run(code) == "module 'openai.types' has no attribute 'NoSuchModel'"


def test_the_unused_aiohttp_transport_fails_the_way_openai_documents():
    code = (
        "from tui_agent.core.openai_import import load\n"
        "openai = load()\n"
        "try:\n"
        "    openai.DefaultAioHttpClient()\n"
        "except RuntimeError as exc:\n"
        "    print('refused:', 'aiohttp' in str(exc))\n"
    )
    assert run(code) == "refused: True"


def test_a_streamed_reply_with_a_tool_call_through_the_lazy_client(tmp_path: Path):
    server = FakeOpenAI().start()
    try:
        server.script(Reply(text="Hello there", tool_calls=[("web_search", '{"query": "x"}')]))
        code = f"""
import asyncio, json, sys
from tui_agent.core.llm import LLMClient
async def main():
    client = LLMClient({server.base_url!r}, "key", max_attempts=1)
    pieces = [item async for item in client.stream(model="m", messages=[{{"role": "user", "content": "hi"}}],
              tools=[{{"type": "function", "function": {{"name": "web_search", "parameters": {{"type": "object"}}}}}}])]
    await client.close()
    done = pieces[-1]
    print(json.dumps([done.text, [(c.name, c.arguments) for c in done.tool_calls],
                      "openai.types.responses.response" in sys.modules]))
asyncio.run(main())
"""
        text, calls, responses = json.loads(run(code))
    finally:
        server.stop()
    assert text == "Hello there"
    assert calls == [["web_search", '{"query": "x"}']]
    assert responses is False


def test_the_first_request_imports_nothing_once_the_warm_up_is_over():
    """What the warm-up imports is all a turn's request needs: on the first turn nothing is left to
    import between Enter and the request leaving (the SDK's chat resource alone took ~0.1 s)."""
    server = FakeOpenAI().start()
    try:
        server.script(Reply(text="Hello there", tool_calls=[("web_search", '{"query": "x"}')]))
        code = f"""
import asyncio, json, sys
from tui_agent.ui import warmup
from tui_agent.core.llm import LLMClient
warmup.wait()
warmup._thread.join()  # and the images it preloads last
client = LLMClient({server.base_url!r}, "key", max_attempts=1)
client.client  # built in the warm-up too (app.preload_client)
before = set(sys.modules)
async def main():
    pieces = [item async for item in client.stream(model="m", messages=[{{"role": "user", "content": "hi"}}],
              tools=[{{"type": "function", "function": {{"name": "web_search", "parameters": {{"type": "object"}}}}}}])]
    await client.close()
    return pieces[-1].text
text = asyncio.run(main())
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("openai", "httpx2", "httpcore2", "anyio", "pydantic", "tui_agent"))
print(json.dumps([text, new]))
"""
        text, new = json.loads(run(code))
    finally:
        server.stop()
    assert text == "Hello there"
    assert new == []
