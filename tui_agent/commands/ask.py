"""``tui-agent ask``: one turn through the unified loop; reply on stdout, activity on stderr."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable

from tui_agent.commands.reasoning_output import ReasoningPrinter
from tui_agent.core import events as ev
from tui_agent.core.profiles import ProfileError
from tui_agent.core.session import Session, open_session
from tui_agent.core.store import history, worker
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import revealed, visible


def _raw(text: str) -> str:
    return text


NO_ENDPOINT_HINT = (
    "hint: export OPENAI_API_KEY (and OPENAI_BASE_URL), start Ollama, "
    "or point the profile elsewhere: tui-agent profile set base_url URL"
)


class _Out:
    """Text from the model, tools and servers has its control characters made visible (``--raw``: not)."""

    safe: Callable[[str], str] = staticmethod(visible)


def _err(text: str) -> None:
    print(_Out.safe(text), file=sys.stderr, flush=True)


def run_ask(vault_arg: str | None, args: argparse.Namespace) -> int:
    # On the store's thread, as the turn's store calls are: one connection, not two (to a server
    # far away, connecting costs round trips of its own).
    prepared = worker.executor().submit(_prepare, vault_arg, args).result()
    if isinstance(prepared, int):
        return prepared
    session, profile, conversation_id = prepared
    interactive = args.text != ["-"] and sys.stdin.isatty() and sys.stderr.isatty()
    if interactive:
        from tui_agent.commands.approve import review

        refused = review(profile, interactive)  # asks at the terminal: here (Ctrl+C reaches it)
        if refused is not None:
            return refused
    # Piped text ends with a newline (echo, a file): the message is the text, not an empty last line.
    text = sys.stdin.read().rstrip("\r\n") if args.text == ["-"] else " ".join(args.text)
    show_reasoning = not getattr(args, "no_reasoning", False)
    signals: list[int] = []  # what ended the turn early (SIGINT, SIGTERM), in order
    try:
        code = asyncio.run(
            _turn(session, profile, conversation_id, text, args.yes, interactive, show_reasoning, signals)
        )
    except asyncio.CancelledError:
        code = 1
    # Decided by the signal, not by where its cancellation landed: a turn may end normally (stored
    # as cancelled) when the cancellation reaches it inside a step that handles it.
    if signal.SIGINT in signals:
        raise KeyboardInterrupt  # one line and 130, by cli's guard
    if signal.SIGTERM in signals:  # the turn was cancelled and the MCP servers stopped
        _err("terminated")
        return 143
    return code


def _prepare(vault_arg: str | None, args: argparse.Namespace) -> tuple[Session, Profile, int | None] | int:
    """The session, the profile and the conversation of the turn (or the exit code of a refusal)."""
    try:
        session = open_session(vault_arg)
        profile = session.profile(args.profile)
    except ProfileError as exc:
        _err(f"error: profile {exc}")
        return 2
    try:
        if args.new:
            conversation_id: int | None = None
        elif args.conversation is not None:
            conversation_id = history.get_conversation(args.conversation).id
        else:
            conversation_id = None
        conversation_id = _read_together(profile, conversation_id, last=not args.new and args.conversation is None)
    except LookupError as exc:
        _err(f"error: {exc}")
        return 2
    _Out.safe = staticmethod(_raw if getattr(args, "raw", False) else visible)
    if not (args.text != ["-"] and sys.stdin.isatty() and sys.stderr.isatty()):
        from tui_agent.commands.approve import review

        refused = review(profile, False)  # settings changed in the shared store: approved here first
        if refused is not None:
            return refused
    return session, profile, conversation_id


def _read_together(profile: Profile, conversation_id: int | None, *, last: bool) -> int | None:
    """What the endpoint refused before (the client reads it when it is built) and (``last``) the
    conversation to go on: one round trip to the store (store/batch.py)."""
    from tui_agent.core.endpoint_quirks import QUIRKS_KEY, endpoint_quirks
    from tui_agent.core.store import batch

    quirk_key = QUIRKS_KEY + profile.base_url.rstrip("/")
    statements: list[batch.Statement] = [("SELECT key, value FROM settings WHERE key = {key}", {"key": quirk_key})]
    if last:
        statements.append(history.LAST_CONVERSATION_SQL)
    results = batch.together(Profile._meta.database, statements)
    endpoint_quirks(profile.base_url, {str(key): str(value) for key, value in results[0].rows})
    if last:
        found = history.last_conversation_in(results[1])
        return found.id if found is not None else None
    return conversation_id


async def _turn(
    session: Session,
    profile: Profile,
    conversation_id: int | None,
    text: str,
    yes: bool,
    interactive: bool = False,
    show_reasoning: bool = True,
    signals: list[int] | None = None,
) -> int:
    from tui_agent.core.loop import AgentLoop
    from tui_agent.core.mcp.manager import McpManager
    from tui_agent.core.tools.registry import default_registry

    async def approve(tool: str, question: str) -> bool:
        if yes or not interactive:
            # What is approved is shown whole: invisible and bidi characters too (even with --raw).
            question = revealed(question)
            _err(f"[{tool}] {'approved (--yes)' if yes else 'refused: pass --yes to approve'}: {question}")
            return yes
        _err(f"[{tool}] {revealed(question)}")
        sys.stderr.write("approve? [y/N] ")
        sys.stderr.flush()
        answer = await asyncio.to_thread(sys.stdin.readline)
        return answer.strip().lower() in ("y", "yes")

    task = asyncio.current_task()
    received = signals if signals is not None else []

    def stop(signum: int) -> None:
        received.append(signum)
        if task is not None:
            task.cancel()

    if task is not None:
        for signum in (signal.SIGINT, signal.SIGTERM):  # Ctrl+C and SIGTERM end the turn the same way
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(signum, stop, signum)
    registry = default_registry()
    servers = McpManager(session.vault, registry, notice=lambda notice: _err(f"⚠ {notice}"))
    await servers.start(profile)  # MCP servers start before the turn (none configured: nothing happens)
    loop = AgentLoop(session.vault, profile, registry, approve=approve)
    status = "error"
    wrote_text = False
    thinking = ReasoningPrinter(sys.stderr, show_reasoning, _Out.safe)
    try:
        async for event in loop.run_turn(conversation_id, text):
            if isinstance(event, (ev.ReasoningDelta, ev.TextToReasoning)):
                thinking.write(event)
                continue
            thinking.end()
            if isinstance(event, ev.TextDelta):
                sys.stdout.write(_Out.safe(event.text))
                sys.stdout.flush()
                wrote_text = True
            elif isinstance(event, ev.AssistantFinished):
                if wrote_text:
                    sys.stdout.write("\n")
                    wrote_text = False
                if event.status == "error":
                    _err("↻ the reply broke off (the server said the error is transient); asking again")
            elif isinstance(event, ev.ToolStarted):
                _err(f"→ {event.summary}")
            elif isinstance(event, ev.ToolFinished):
                result = event.result
                _err(
                    f"← {event.name}: "
                    + ("ok " + ", ".join(result.images) if result.is_ok else f"error: {result.error}")
                )
            elif isinstance(event, ev.ModelSwitched):
                _err(f"⇄ model {event.model} ({event.reason})")
            elif isinstance(event, ev.ConversationChanged):
                history.remember_conversation(event.conversation_id)
            elif isinstance(event, ev.Notice):
                print(_Out.safe(event.text))
            elif isinstance(event, ev.ModelNotice):
                _err(f"⚠ {event.text}")
            elif isinstance(event, ev.ErrorEvent):
                if wrote_text:
                    sys.stdout.write("\n")
                    wrote_text = False
                _err(f"error: {event.message}")
                if event.kind == "connection":
                    _err(NO_ENDPOINT_HINT)
                elif event.kind == "tls":
                    _err("If you trust this server, point SSL_CERT_FILE at a CA bundle that holds its certificate.")
            elif isinstance(event, ev.Done):
                status = event.status
    finally:
        await loop.aclose()
        await servers.aclose()
    return 0 if status == "complete" else 1
