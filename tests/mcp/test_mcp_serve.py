"""Under ``tui-agent serve``: closing the browser tab ends the app process and its MCP servers."""

from __future__ import annotations

import time

import pytest
from mcp_helpers import add_fixture, started_pids, wait_gone
from serve_helpers import launch, needs_browser, open_app, start_serve

pytestmark = pytest.mark.slow


@pytest.fixture
def mcp_served(env, pids, tmp_path):
    add_fixture()  # before serve starts: each tab's app process starts it
    server = start_serve(env.vault.root, tmp_path / "serve.out")
    yield server
    server.stop()


@needs_browser()
def test_closing_the_tab_ends_the_servers(env, pids, mcp_served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_app(browser, mcp_served.url, env.vault.root)
        deadline = time.monotonic() + 90
        while not started_pids(pids) and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        assert len(started_pids(pids)) == 1, "the tab's app did not start its MCP server"
        page.wait_for_timeout(1000)
        page.close()
        assert wait_gone(started_pids(pids), timeout_s=30) == []
        browser.close()
