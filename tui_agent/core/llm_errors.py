"""Errors of the LLM client and the server's own message out of every error body shape.

Servers answer errors as ``{"error": {"message"}}`` (OpenAI, OpenRouter, Groq, DeepSeek),
``{"message"}`` / ``{"object": "error", "message"}`` (vLLM, Mistral), ``{"detail": ...}``
(FastAPI servers, Azure), a JSON list ``[{"error": ...}]`` (Gemini), plain text, or an
HTML page from a proxy. :func:`server_message` finds the human message in each.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

MAX_MESSAGE = 300
TRANSIENT_WORDS = ("overloaded", "rate limit", "rate_limit", "try again", "temporarily", "unavailable", "timeout")


class LLMError(Exception):
    """A request failed for good. ``str(err)`` is a one-line message fit for a user."""

    def __init__(self, message: str, kind: str = "error", retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


def server_message(body: Any, content_type: str = "") -> tuple[str, str]:
    """(one-line message, the rest worth logging) from an error body (text, bytes or parsed JSON)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body.strip()
        if not text:
            return "", ""
        if text.startswith("data:"):
            # An error status with an SSE body: the first event holds the error.
            text = text.splitlines()[0][5:].strip()
        try:
            parsed = json.loads(text)
        except ValueError:
            if "html" in content_type.lower() or text.startswith("<"):
                return _one_line(_html_headline(text)), text
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            return _one_line(lines[0]), "\n".join(lines[1:])
        body = parsed
    message = _message_of(body)
    return _one_line(message), ""


def _message_of(value: Any, depth: int = 0) -> str:
    if depth > 5 or value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return str(value)
    if isinstance(value, list):
        parts = [_message_of(item, depth + 1) for item in value]
        return "; ".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("error", "message", "detail", "msg", "error_message", "errors", "title"):
            if key in value and value[key] not in (None, "", [], {}):
                found = _message_of(value[key], depth + 1)
                if found:
                    loc = value.get("loc")
                    if key == "msg" and isinstance(loc, list):
                        return ".".join(str(p) for p in loc) + ": " + found
                    return found
        return json.dumps(value)[:MAX_MESSAGE]
    return str(value)


def _html_headline(text: str) -> str:
    for pattern in (r"<title[^>]*>(.*?)</title>", r"<h1[^>]*>(.*?)</h1>"):
        match = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
        if match and match.group(1).strip():
            return html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))
    stripped = re.sub(r"<[^>]+>", "\n", text)
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    return html.unescape(lines[0]) if lines else "an HTML error page"


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def stream_error(payload: dict[str, Any]) -> tuple[str, int | None, bool] | None:
    """An error sent inside a 200 stream (``data: {"error": ...}``): (message, code, transient) or None."""
    error = payload.get("error")
    if error is None and payload.get("object") == "error":
        error = payload
    if error in (None, "", {}):
        return None
    message = _one_line(_message_of(error)) or "unknown error"
    code: int | None = None
    raw_code = error.get("code") if isinstance(error, dict) else None
    raw_code = raw_code if raw_code is not None else (error.get("status") if isinstance(error, dict) else None)
    if isinstance(raw_code, int) or (isinstance(raw_code, str) and raw_code.isdigit()):
        code = int(raw_code)
    kind = str(error.get("type") or error.get("code") or "") if isinstance(error, dict) else ""
    lowered = f"{message} {kind}".lower()
    if code is not None:
        transient = code == 429 or code >= 500 or "overloaded" in lowered
    else:
        transient = any(word in lowered for word in TRANSIENT_WORDS) or "server_error" in lowered
    return message, code, transient


def refuses_stream_options(text: str) -> bool:
    """A 400/422 body that names the usage option (each server words it differently)."""
    lowered = text.lower()
    return "stream_options" in lowered or "include_usage" in lowered or "streamoptions" in lowered


def refuses_tools_with_stream(text: str) -> bool:
    """Older llama.cpp servers: "Cannot use tools with stream" (and relays quoting it)."""
    lowered = text.lower()
    return "tools with stream" in lowered or ("stream" in lowered and "tool" in lowered and "not supported" in lowered)


# What the SDK's exceptions carry, read defensively (any may be missing).
def certificate_error(exc: BaseException) -> str | None:
    """The reason, when a certificate check failed somewhere in ``exc``'s chain of causes."""
    import ssl

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return str(current.verify_message or current.reason or "certificate verify failed")
        current = current.__cause__ or current.__context__
    return None


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def body_text(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            return str(response.text)
        except Exception:  # the body could not be read; fall back to what the SDK kept
            pass
    body = getattr(exc, "body", None)
    if body is None:
        return ""
    return body if isinstance(body, str) else json.dumps(body)


def detail_of(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message")
        if message:
            return str(message)[:300]
    return str(getattr(exc, "message", exc))[:300]


def retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
