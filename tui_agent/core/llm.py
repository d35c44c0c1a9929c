"""The one LLM client: raw SSE read through the openai client, retries and one-line errors.

The stream is read as raw server-sent events, so fields the SDK's models drop or reshape
(``reasoning``, ``reasoning_content``, list-shaped ``content``,
``extra_content.google.thought_signature``) reach :mod:`stream_assembly` intact. The request goes
through the client's documented ``post`` for raw responses, not ``client.chat.completions``: that
resource imports the SDK's chat models and stream helpers (~0.1 s), none of which reads our stream,
and on the first turn that import sat between Enter and the request leaving.

``openai`` is imported lazily (it costs ~0.4 s), so ``tui-agent --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from tui_agent.core.endpoint_quirks import NO_STREAM_OPTIONS, NO_STREAM_WITH_TOOLS, endpoint_quirks, remember_quirk
from tui_agent.core.llm_errors import (
    LLMError,
    body_text,
    certificate_error,
    detail_of,
    refuses_stream_options,
    refuses_tools_with_stream,
    retry_after,
    server_message,
    status_of,
    stream_error,
)
from tui_agent.core.sse import loads as _loads
from tui_agent.core.sse import payloads as _payloads
from tui_agent.core.sse import sse_data as _sse_data
from tui_agent.core.sse import whole_reply as _whole_reply
from tui_agent.core.store.models import Profile
from tui_agent.core.stream_assembly import (
    Completion,
    ReasoningDelta,
    StreamAssembler,
    TextDelta,
    TextToReasoning,
    ToolCall,
    new_call_id,
)

__all__ = [
    "Completion",
    "LLMClient",
    "LLMError",
    "ReasoningDelta",
    "Restart",
    "TextDelta",
    "TextToReasoning",
    "ToolCall",
    "new_call_id",
    "resolve_api_key",
]

log = logging.getLogger("tui_agent.llm")


class Restart:
    """A transient error broke the reply after output; the partial is kept and the request goes again."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _MidStreamError(LLMError):
    """An error the server sent inside a 200 stream (``data: {"error": ...}``)."""


def resolve_api_key(profile: Profile, url: str | None = None, setting: str = "base_url") -> str:
    """The key named by ``api_key_env``, for requests to ``url`` (default: ``base_url``), handed out
    only when this machine approved that URL with that key variable (core.approvals: the one gate
    for every endpoint); a named but unset variable is an error, never a silent blank."""
    from tui_agent.core import approvals, trust

    if profile.api_key_env:
        withheld = trust.withheld(f"the API key in ${profile.api_key_env} is not read or sent")
        if withheld is not None:
            raise LLMError(withheld, kind="untrusted")
    target = profile.base_url if url is None else url
    item = approvals.endpoint(target, profile.api_key_env, f"profile {profile.name}: {setting}")
    try:
        approvals.require(item)
    except approvals.NotApproved as exc:
        raise LLMError(str(exc), kind="unapproved") from None
    if not profile.api_key_env:
        return "no-key"
    value = os.environ.get(profile.api_key_env)
    if not value:
        raise LLMError(
            f"environment variable {profile.api_key_env} is not set (profile field api_key_env); "
            f"export it or change the profile",
            kind="auth",
        )
    return value


class LLMClient:
    """Wraps ``openai.AsyncOpenAI`` for one profile's endpoint."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        api_key_env: str = "",
    ) -> None:
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self._api_key = api_key
        self._client: Any = None
        self.quirks = endpoint_quirks(base_url)

    @property
    def stream_usage(self) -> bool:
        return NO_STREAM_OPTIONS not in self.quirks

    @classmethod
    def for_profile(cls, profile: Profile, **kwargs: Any) -> LLMClient:
        return cls(
            profile.base_url,
            resolve_api_key(profile),
            timeout=float(profile.request_timeout_s),
            api_key_env=profile.api_key_env,
            **kwargs,
        )

    @property
    def client(self) -> Any:
        if self._client is None:
            from tui_agent.core import tls
            from tui_agent.core.openai_import import load

            openai = load()
            # The SDK's own HTTP client and defaults, with the TLS context built ahead (see tls).
            http_client = openai.DefaultAsyncHttpxClient(
                base_url=self.base_url, timeout=self.timeout, verify=tls.context()
            )
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout,
                max_retries=0,
                http_client=http_client,
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def stream(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[TextDelta | ReasoningDelta | TextToReasoning | Restart | Completion, None]:
        """Yield display pieces, then exactly one Completion.

        A request is sent again only when the attempt provably failed: the server could not be
        reached, answered 429/5xx before any output, refused an option we can drop, or said
        mid-stream that the failure is transient (then a :class:`Restart` comes first).
        """
        attempt = 0
        while True:
            attempt += 1
            yielded = False
            try:
                async with aclosing(self._once(model, messages, tools, temperature)) as pieces:
                    async for item in pieces:
                        yielded = True
                        yield item
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if isinstance(exc, LLMError) and exc.kind == "bad_stream":
                    # A shape we do not understand: never retried, the partial reply is kept.
                    log.warning("%s sent %s", self.base_url, exc)
                    raise LLMError(f"{self.base_url} sent {exc}", "bad_stream") from exc
                error = self.translate(exc, model)
                body = body_text(exc)
                if not yielded and self.stream_usage and status_of(exc) in (400, 422) and refuses_stream_options(body):
                    remember_quirk(self.base_url, NO_STREAM_OPTIONS, persist=True)
                    log.info("retrying without stream_options: %s refused them (%s)", self.base_url, error)
                    attempt -= 1
                    continue
                if not yielded and tools and NO_STREAM_WITH_TOOLS not in self.quirks:
                    if refuses_tools_with_stream(body or str(error)):
                        # Not saved: after a server upgrade, streaming with tools should come back.
                        remember_quirk(self.base_url, NO_STREAM_WITH_TOOLS, persist=False)
                        log.info("retrying without streaming: %s refused tools with stream (%s)", self.base_url, error)
                        attempt -= 1
                        continue
                if yielded and isinstance(exc, _MidStreamError) and exc.retryable and attempt < self.max_attempts:
                    log.warning("retrying after a transient error mid-stream (attempt %d): %s", attempt, error)
                    yield Restart(str(error))
                    await asyncio.sleep(self._delay(exc, attempt))
                    continue
                if yielded or not error.retryable or attempt >= self.max_attempts:
                    if yielded and error.kind == "stream" and not isinstance(exc, _MidStreamError):
                        error = LLMError(f"the reply broke off: {error}", "stream")
                    log.warning("request failed (attempt %d): %s", attempt, error, exc_info=exc)
                    raise error from exc
                delay = self._delay(exc, attempt)
                log.warning("retrying in %.2fs (attempt %d failed before any output): %s", delay, attempt, error)
                await asyncio.sleep(delay)

    def _delay(self, exc: BaseException, attempt: int) -> float:
        delay = retry_after(exc) or self.backoff_s * (2 ** (attempt - 1)) * (1 + random.random() * 0.2)
        return min(delay, 30.0)

    async def _once(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, temperature: float | None
    ) -> AsyncGenerator[TextDelta | ReasoningDelta | TextToReasoning | Completion, None]:
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        streaming = not (tools and NO_STREAM_WITH_TOOLS in self.quirks)
        if streaming:
            kwargs["stream"] = True
            if self.stream_usage:
                kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        assembler = StreamAssembler()
        done = False
        response = await self._post(kwargs)
        try:
            content_type = response.headers.get("content-type", "")
            if "event-stream" not in content_type and (not streaming or "json" in content_type):
                # A whole reply (non-streaming request, or a server that ignored stream=true).
                await response.aread()
                payload = _loads(response.text, self.base_url)
                self._raise_if_error(payload)
                for piece in assembler.feed(_whole_reply(payload)):
                    yield piece
                done = True
            else:
                async with aclosing(_sse_data(response)) as events:
                    async for data in events:
                        if not data.strip():
                            continue  # an empty keep-alive event
                        if data.strip() == "[DONE]":
                            done = True
                            break
                        for payload in _payloads(data, self.base_url):
                            self._raise_if_error(payload)
                            for piece in assembler.feed(payload):
                                yield piece
        finally:
            await response.aclose()
        for piece in assembler.flush():
            yield piece
        result = assembler.finish()
        if not done and result.finish_reason is None:
            # The server closed the stream without finishing the reply (a dropped connection).
            raise LLMError(f"the connection to {self.base_url} closed before the reply was complete", "stream")
        if result.finish_reason == "content_filter":
            raise LLMError("the provider's content policy blocked this reply; try rephrasing", kind="content_policy")
        yield result

    async def _post(self, body: dict[str, Any]) -> Any:
        """POST the chat request; the HTTP response comes back with its body unread (the caller
        closes it). Error statuses raise the SDK's errors, as ``chat.completions`` would."""
        client = self.client  # first: it imports openai through openai_import's hook
        import httpx2  # openai's HTTP library, imported with it
        from openai._constants import RAW_RESPONSE_HEADER  # "stream": the SDK leaves the body unread

        return await client.post(
            "/chat/completions",
            cast_to=httpx2.Response,
            body=body,
            options={"headers": {RAW_RESPONSE_HEADER: "stream"}},
        )

    def _raise_if_error(self, payload: Any) -> None:
        found = stream_error(payload) if isinstance(payload, dict) else None
        if found is None:
            return
        message, code, transient = found
        status = f" ({code})" if code else ""
        raise _MidStreamError(
            f"{self.base_url} reported an error{status}: {message}", "server" if transient else "bad_request", transient
        )

    def translate(self, exc: BaseException, model: str) -> LLMError:
        """Map openai and transport exceptions to one-line, actionable errors naming the server's message."""
        import httpx2

        from tui_agent.core.openai_import import load

        openai = load()

        url = self.base_url
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, (openai.APITimeoutError, httpx2.TimeoutException)):
            # Retried only when the connection was never made; a request that went out may be billed.
            never_sent = isinstance(exc, httpx2.ConnectTimeout) or isinstance(exc.__cause__, httpx2.ConnectTimeout)
            return LLMError(
                f"{url} did not answer within {self.timeout:g}s (profile field request_timeout_s)",
                "timeout",
                never_sent,
            )
        if isinstance(exc, openai.APIConnectionError):
            untrusted = certificate_error(exc)
            if untrusted is not None:  # not retried: the next attempt meets the same certificate
                return LLMError(f"{url} sent a TLS certificate this machine does not trust ({untrusted})", "tls")
            # Retried only when the connection was never made: then nothing reached the server.
            never_sent = isinstance(exc.__cause__, httpx2.ConnectError)
            return LLMError(
                f"cannot reach {url}: is the server running? (profile field base_url)", "connection", never_sent
            )
        if isinstance(exc, httpx2.TransportError):
            return LLMError(f"the connection to {url} closed before the reply was complete", "stream")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail, rest = server_message(body_text(exc), exc.response.headers.get("content-type", ""))
            if rest:
                log.info("rest of the %d error body from %s:\n%s", status, url, rest[:4000])
            detail = detail or detail_of(exc)
            if isinstance(exc, openai.AuthenticationError):
                env = self.api_key_env or "(none set; profile field api_key_env)"
                return LLMError(f"{url} rejected the API key from {env}: check the key ({detail})", "auth")
            if isinstance(exc, openai.PermissionDeniedError):
                return LLMError(f"{url} refused access (403): {detail}", "auth")
            if isinstance(exc, openai.NotFoundError):
                return LLMError(
                    f"model {model!r} not found at {url} (check the profile's model fields): {detail}", "model"
                )
            if isinstance(exc, openai.RateLimitError):
                return LLMError(f"{url} is rate limiting requests (429): {detail}", "rate_limit", True)
            if status >= 500:
                return LLMError(f"{url} had a server error ({status}): {detail}", "server", True)
            if "content" in detail.lower() and "polic" in detail.lower():
                return LLMError(f"the provider's content policy refused this request: {detail}", "content_policy")
            return LLMError(f"{url} refused the request ({status}): {detail}", "bad_request")
        if isinstance(exc, openai.APIError):
            return LLMError(f"bad response from {url}: {exc}", "stream")
        return LLMError(f"{exc.__class__.__name__}: {exc}", "error")
