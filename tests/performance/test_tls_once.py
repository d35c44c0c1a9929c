"""The CA bundle is loaded once a run: building a TLS context costs ~45 ms of CPU (OpenSSL reading
the system's bundle), and every request the app makes (the endpoint's probe, the model catalog,
the chat client) uses the one core/tls built in a thread of its own at the warm-up."""

from __future__ import annotations

import httpcore2
from pilot_helpers import running, send, until

from tui_agent.core import tls
from tui_agent.ui.startup import Startup


async def test_the_app_builds_one_tls_context_from_start_to_the_first_reply(env, monkeypatch):
    # A run of its own: the context this test process built for earlier tests is not there.
    monkeypatch.setattr(tls, "_thread", None)
    monkeypatch.setattr(tls, "_context", None)
    monkeypatch.setattr(tls, "_error", None)
    built: list[object] = []
    real = httpcore2.default_ssl_context

    def counted(*args: object, **kwargs: object) -> object:
        built.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpcore2, "default_ssl_context", counted)  # what httpx2 builds a context with
    probed: list[bool] = []
    probe = Startup.probe_endpoint

    def probe_and_say(startup: Startup) -> None:
        probe(startup)
        probed.append(True)

    monkeypatch.setattr(Startup, "probe_endpoint", probe_and_say)
    async with running(env, "hi there", check_endpoint=True) as (app, pilot):
        await until(pilot, lambda: app.startup.preload_done.is_set() and bool(probed))
        await send(app, pilot, "hello")
        assert len(env.fake.chat_requests) == 1
    assert len(built) == 1
