"""web_search: DuckDuckGo (the ``ddgs`` package) or SearXNG's JSON API."""

from __future__ import annotations

import asyncio
from typing import Any

from tui_agent.core.tools.base import Tool, ToolContext, ToolResult

MAX_RESULTS = 10
DEFAULT_RESULTS = 5
TIMEOUT_S = 15.0


class WebSearchTool(Tool):
    name = "web_search"
    role = "web_tool"
    description = "Search the web for current information. Returns title, url and snippet for each result."
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The search query."},
            "max_results": {
                "type": "integer",
                "description": f"How many results (1-{MAX_RESULTS}, default {DEFAULT_RESULTS}).",
            },
        },
        "required": ["query"],
    }

    def summarize(self, arguments: dict[str, Any]) -> str:
        return f"web_search {arguments.get('query', '')!r}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = str(arguments["query"]).strip()
        if not query:
            return ToolResult.fail("missing parameter: query (it is empty)")
        limit = max(1, min(int(arguments.get("max_results") or DEFAULT_RESULTS), MAX_RESULTS))
        backend = ctx.profile.web_search_backend
        try:
            if backend == "searxng":
                _approved(ctx.profile)
                results = await _searxng(ctx.profile.web_search_url, query, limit)
            elif backend == "duckduckgo":
                async with asyncio.timeout(TIMEOUT_S):
                    results = await asyncio.to_thread(_duckduckgo, query, limit)
            else:
                return ToolResult.fail(f"web_search_backend: unknown backend {backend!r}")
        except TimeoutError:
            return ToolResult.fail(f"web search ({backend}) timed out after {TIMEOUT_S:g}s")
        except SearchError as exc:
            return ToolResult.fail(str(exc))
        return ToolResult.ok({"query": query, "backend": backend, "results": results[:limit]})


class SearchError(Exception):
    pass


def _approved(profile: Any) -> None:
    """The SearXNG URL gets the searches (the conversation's words): only once approved here."""
    from tui_agent.core import approvals

    if not profile.web_search_url:
        return  # _searxng says what is missing
    item = approvals.endpoint(profile.web_search_url, "", f"profile {profile.name}: web_search_url", "web searches")
    try:
        approvals.require(item)
    except approvals.NotApproved as exc:
        raise SearchError(str(exc)) from None


async def _searxng(base_url: str, query: str, limit: int) -> list[dict[str, str]]:
    import httpx2

    from tui_agent.core import tls

    if not base_url:
        raise SearchError("web_search_url: required for the searxng backend (set it in the profile)")
    url = base_url.rstrip("/") + "/search"
    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT_S, verify=tls.context()) as client:
            response = await client.get(url, params={"q": query, "format": "json"})
    except httpx2.TimeoutException:
        raise SearchError(f"web search (searxng) timed out after {TIMEOUT_S:g}s at {url}") from None
    except httpx2.HTTPError as exc:
        raise SearchError(f"cannot reach SearXNG at {url}: {exc.__class__.__name__}") from None
    if response.status_code != 200:
        raise SearchError(f"SearXNG at {url} answered HTTP {response.status_code} (is format=json enabled?)")
    try:
        items = response.json().get("results", [])
    except ValueError:
        raise SearchError(f"SearXNG at {url} did not return JSON (is format=json enabled?)") from None
    return [_result(i.get("title"), i.get("url"), i.get("content")) for i in items if isinstance(i, dict)][:limit]


def _duckduckgo(query: str, limit: int) -> list[dict[str, str]]:
    try:
        from ddgs import DDGS
    except ImportError:
        raise SearchError("the duckduckgo backend needs the 'ddgs' package (pip install ddgs)") from None
    try:
        items = DDGS(timeout=int(TIMEOUT_S)).text(query, max_results=limit) or []
    except Exception as exc:  # ddgs raises its own exception types for network trouble
        raise SearchError(f"DuckDuckGo search failed: {exc.__class__.__name__}: {str(exc)[:200]}") from None
    return [_result(i.get("title"), i.get("href"), i.get("body")) for i in items]


def _result(title: Any, url: Any, snippet: Any) -> dict[str, str]:
    return {"title": str(title or ""), "url": str(url or ""), "snippet": str(snippet or "")[:500]}
