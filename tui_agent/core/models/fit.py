"""Fit a request to the window the model really runs with, and tell when the server cut one.

Token counts are estimates (about 4 characters a token for text, 3 for the JSON of tool schemas,
which tokenizes denser); a margin covers the difference from the real tokenizer.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from tui_agent.core.models.info import LLAMACPP, LMSTUDIO, OLLAMA, OPENROUTER, SERVER_NAMES, VLLM, ModelInfo

CHARS_PER_TOKEN = 4
SCHEMA_CHARS_PER_TOKEN = 3
MIN_REPLY = 256
MAX_REPLY = 4096
MARGIN_SHARE = 10  # a tenth of the window for the estimate's error
MIN_HISTORY = 256  # less than this for the conversation: the window is too small for the tools
CUT_SHARE = 0.5  # the server read less than half of what was sent: it cut the prompt
CUT_MIN_SENT = 1024


class Fit(NamedTuple):
    """The budget for the conversation's messages and what it was made from."""

    history_tokens: int
    window: int | None
    tools_tokens: int
    too_small: bool  # the system prompt, the tool schemas and a reply leave (almost) no room


def schema_tokens(tools: list[dict[str, Any]] | None) -> int:
    return len(json.dumps(tools)) // SCHEMA_CHARS_PER_TOKEN if tools else 0


def reply_room(window: int) -> int:
    """Tokens kept free for the reply (a quarter of the window, within 256-4,096)."""
    return max(MIN_REPLY, min(MAX_REPLY, window // 4))


def history_budget(profile_budget: int, window: int | None, system_tokens: int, tools_tokens: int) -> Fit:
    """The smaller of the profile's budget and what the window leaves after the system prompt, the
    tool schemas, the reply and the margin."""
    if window is None:
        return Fit(profile_budget, None, tools_tokens, False)
    room = window - system_tokens - tools_tokens - reply_room(window) - window // MARGIN_SHARE
    return Fit(max(0, min(profile_budget, room)), window, tools_tokens, room < MIN_HISTORY)


def server_cut(prompt_tokens: int | None, sent_tokens: int, window: int | None) -> bool:
    """Did the server read much less than was sent (it cut the prompt from the front), or exactly
    its window (it filled it to the brim and cut the rest)?"""
    if not prompt_tokens:
        return False
    if window is not None and prompt_tokens == window:
        return True
    return sent_tokens >= CUT_MIN_SENT and prompt_tokens < sent_tokens * CUT_SHARE


def raise_window(info: ModelInfo) -> str:
    """How to give the model a bigger window on this server."""
    if info.server == OLLAMA:
        return (
            "start Ollama with a bigger window (OLLAMA_CONTEXT_LENGTH=32768 ollama serve) "
            "or set a bigger num_ctx in a Modelfile"
        )
    if info.server == LMSTUDIO:
        return "load the model with a longer context length in LM Studio (lms load MODEL --context-length 32768)"
    if info.server == VLLM:
        return "start vLLM with a bigger --max-model-len"
    if info.server == LLAMACPP:
        return "start llama-server with a bigger context (-c 32768)"
    if info.server == OPENROUTER:
        return "pick a model with a longer context_length"
    return "raise the server's context length"


def too_small_text(info: ModelInfo, fit: Fit, system_tokens: int) -> str:
    server = SERVER_NAMES.get(info.server, info.server)
    return (
        f"{info.id} runs with a {fit.window:,}-token window on {server} ({info.window_source}): the system prompt "
        f"(~{system_tokens:,}) and the tool schemas (~{fit.tools_tokens:,}) leave almost no room for the "
        f"conversation; {raise_window(info)}"
    )


def cut_text(info: ModelInfo, prompt_tokens: int, sent_tokens: int) -> str:
    server = SERVER_NAMES.get(info.server, info.server)
    window = f" (its window: {info.window:,})" if info.window else ""
    return (
        f"the server cut the prompt: {server} read {prompt_tokens:,} tokens of about {sent_tokens:,} sent to "
        f"{info.id}{window}, so the start (the system prompt, the tools) was lost; {raise_window(info)}"
    )


def no_tools_text(info: ModelInfo) -> str:
    server = SERVER_NAMES.get(info.server, info.server)
    return (
        f"{info.id} cannot call tools ({server} does not list the tools capability): it is sent no tool "
        "schemas; tools need another chat_model (tui-agent models lists what each can do)"
    )


def no_vision_text(info: ModelInfo) -> str:
    server = SERVER_NAMES.get(info.server, info.server)
    return (
        f"vision_model {info.id} cannot see images ({server} does not list the vision capability): it will not "
        "see the pictures it is sent; set vision_model to a model with vision (tui-agent models)"
    )
