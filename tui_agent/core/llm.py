"""The one LLM client: streamed text, assembled tool calls, usage, retries and one-line errors.

``openai`` is imported lazily (it costs ~0.4 s), so ``tui-agent --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from tui_agent.core.store.models import Profile

log = logging.getLogger("tui_agent.llm")


class LLMError(Exception):
    """A request failed for good. ``str(err)`` is a one-line message fit for a user."""

    def __init__(self, message: str, kind: str = "error", retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = ""


@dataclass
class Completion:
    """The end of one streamed response."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class TextDelta:
    text: str


def resolve_api_key(profile: Profile) -> str:
    """The key named by ``api_key_env``; a named but unset variable is an error, never a silent blank."""
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
        self.stream_usage = True

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
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=0
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
    ) -> AsyncIterator[TextDelta | Completion]:
        """Yield text deltas, then exactly one Completion. Retries only before anything was yielded."""
        attempt = 0
        while True:
            attempt += 1
            yielded = False
            once = self._stream_once(model, messages, tools, temperature)
            try:
                async for item in once:
                    yielded = True
                    yield item
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = self.translate(exc, model)
                if not yielded and self.stream_usage and "stream_options" in str(error):
                    # Some servers reject the usage option; ask again without it (usage is then unknown).
                    self.stream_usage = False
                    attempt -= 1
                    continue
                if yielded or not error.retryable or attempt >= self.max_attempts:
                    if yielded and error.retryable:
                        error = LLMError(f"the reply broke off: {error}", kind="stream")
                    log.warning("request failed (attempt %d): %s", attempt, error, exc_info=exc)
                    raise error from exc
                delay = _retry_after(exc) or self.backoff_s * (2 ** (attempt - 1)) * (1 + random.random() * 0.2)
                log.info("retrying after %s in %.2fs (attempt %d)", error, delay, attempt)
                await asyncio.sleep(min(delay, 30.0))
            finally:
                await once.aclose()  # a reply abandoned halfway closes its HTTP stream now, not at exit

    async def _stream_once(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, temperature: float | None
    ) -> AsyncGenerator[TextDelta | Completion, None]:
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        if self.stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        stream = await self.client.chat.completions.create(**kwargs)
        try:
            result = Completion()
            calls: dict[int, ToolCall] = {}
            text_parts: list[str] = []
            async for chunk in stream:
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    result.prompt_tokens = usage.prompt_tokens
                    result.completion_tokens = usage.completion_tokens
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text_parts.append(delta.content)
                        yield TextDelta(delta.content)
                    for tc in (delta.tool_calls if delta is not None else None) or []:
                        call = calls.setdefault(tc.index, ToolCall(id="", name=""))
                        if tc.id:
                            call.id = tc.id
                        if tc.function is not None:
                            if tc.function.name:
                                call.name += tc.function.name
                            if tc.function.arguments:
                                call.arguments += tc.function.arguments
                    if choice.finish_reason:
                        result.finish_reason = choice.finish_reason
            result.text = "".join(text_parts)
            result.tool_calls = [calls[i] for i in sorted(calls)]
            for index, call in enumerate(result.tool_calls):
                if not call.id:
                    call.id = f"call_{index}_{random.getrandbits(32):08x}"
            if result.finish_reason is None:
                # The server closed the stream without finishing the reply (a dropped connection).
                raise LLMError(
                    f"the connection to {self.base_url} closed before the reply was complete", "stream", True
                )
            if result.finish_reason == "content_filter":
                raise LLMError(
                    "the provider's content policy blocked this reply; try rephrasing", kind="content_policy"
                )
            yield result
        finally:
            await stream.close()  # an abandoned reply closes its HTTP response now

    def translate(self, exc: BaseException, model: str) -> LLMError:
        """Map openai exceptions to one-line, actionable errors."""
        import openai

        url = self.base_url
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(
                f"{url} did not answer within {self.timeout:g}s (profile field request_timeout_s)", "timeout", True
            )
        if isinstance(exc, openai.APIConnectionError):
            return LLMError(f"cannot reach {url}: is the server running? (profile field base_url)", "connection", True)
        if isinstance(exc, openai.AuthenticationError):
            env = self.api_key_env or "(none set; profile field api_key_env)"
            return LLMError(f"{url} rejected the API key from {env}: check the key", "auth")
        if isinstance(exc, openai.PermissionDeniedError):
            return LLMError(f"{url} refused access (403): {_detail(exc)}", "auth")
        if isinstance(exc, openai.NotFoundError):
            return LLMError(
                f"model {model!r} not found at {url} (check the profile's model fields): {_detail(exc)}", "model"
            )
        if isinstance(exc, openai.RateLimitError):
            return LLMError(f"{url} is rate limiting requests (429): {_detail(exc)}", "rate_limit", True)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status >= 500:
                return LLMError(f"{url} had a server error ({status}): {_detail(exc)}", "server", True)
            if "content" in _detail(exc).lower() and "polic" in _detail(exc).lower():
                return LLMError("the provider's content policy refused this request; try rephrasing", "content_policy")
            return LLMError(f"{url} refused the request ({status}): {_detail(exc)}", "bad_request")
        if isinstance(exc, openai.APIError):
            return LLMError(f"bad response from {url}: {exc}", "stream", True)
        return LLMError(f"{exc.__class__.__name__}: {exc}", "error")


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message")
        if message:
            return str(message)[:300]
    return str(getattr(exc, "message", exc))[:300]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
