"""One turn on screen: the core loop's events shown by a TurnView, errors as cards, and nothing
lost when the turn fails before the user's message is stored."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from tui_agent.core import profiles
from tui_agent.core.events import TurnStarted
from tui_agent.core.llm import LLMError
from tui_agent.core.loop import AgentLoop
from tui_agent.ui import warmup
from tui_agent.ui.errors import cut_by_outage, friendly, store_failure, store_where
from tui_agent.ui.turn_view import TurnView
from tui_agent.ui.widgets.bubbles import ErrorCard

if TYPE_CHECKING:
    from tui_agent.ui.host import TurnHost
    from tui_agent.ui.widgets.bubbles import UserBubble


async def run_turn(
    host: TurnHost,
    conversation_id: int | None,
    text: str,
    attachments: list[str],
    *,
    edit_of: int | None = None,
    regenerate: int | None = None,
    retry: bool = False,
    bubble: UserBubble | None = None,
) -> None:
    """Imported with the first turn (the loop, the events and the turn's widgets are not needed
    before it); ``ConversationView.run_turn`` runs it as the turn's worker."""
    warmup.turn_started()
    started = retry or regenerate is not None  # until the user's message is stored, a failure gives the text back
    view = TurnView(host, conversation_id, user_bubble=bubble, stored=started)
    away: str | None = None  # the store's server, when it is away (the message waits for it)
    try:
        await host.client_ready()
        await host.before_turn()
        profile = await host.reload_profile()  # read once a turn (on the store's thread)
        loop = AgentLoop(
            host.vault,
            profile,
            host.registry,
            client=host.llm_client(profile),
            keep_client=True,
            approve=host.approve,
        )
        try:
            if regenerate is not None:
                events = loop.regenerate(regenerate)
            elif retry and conversation_id:
                events = loop.retry_turn(conversation_id)
            else:
                events = loop.run_turn(conversation_id, text, attachments, edit_of=edit_of)
            async with aclosing(events):  # cancelled while an event is drawn: the turn ends at once too
                async for event in events:
                    await view.handle(event)
                    if isinstance(event, TurnStarted):
                        started = True
        finally:
            await loop.aclose()
    except asyncio.CancelledError:
        await view.close_bubble("cancelled")
        if view.attached:  # another conversation opened meanwhile has a status of its own
            host.status_line.show("cancelled", state="error")
        raise
    except (LLMError, profiles.ProfileError) as exc:
        kind = getattr(exc, "kind", "model")
        await view._mount(ErrorCard(friendly(kind, str(exc))))
    except Exception as exc:  # the store failed reading the profile: nothing was sent
        failure = store_failure(exc)
        if failure is None:
            raise
        view.error_kind, view.error_text = failure
        if failure[0] != "store_away":
            await host.chat_log.mount(ErrorCard(friendly(*failure)))
        elif started:  # a retry or a regenerate: nothing waits in the composer (the status line names the server)
            await host.chat_log.mount(ErrorCard(cut_by_outage(None)))
    finally:
        if view.error_kind == "store_away":
            away = store_where()
        host.first_words_shown()  # or there will be none: what waited for them goes on
        if not started:
            if bubble is not None and bubble.is_attached:
                await bubble.remove()
            for welcome in host.chat_log.query(".welcome"):
                welcome.display = True  # hidden at Enter (ConversationView._submitted)
            # Nothing was stored (a bad /attach, say): nothing is lost, the text goes back.
            if not host.composer.text:
                host.composer.load_text(text)
                host.composer.move_cursor(host.composer.document.end)
            host.pending_attachments = attachments + host.pending_attachments
            host.show_pending_attachments()
        if away is not None:
            # Sent by itself when the server answers again (if the composer still holds it as it was).
            host.store_away(None if started else text, away)
        me = get_current_worker()
        for key in {conversation_id, view.conversation_id}:
            if host.turns.get(key) is me:
                del host.turns[key]
        if not view.attached and view.conversation_id == host.conversation_id:
            await host.chat_log.show_conversation(host.conversation_id)
        host.turn_ended()
        # What was sent during the reply: the next one goes now (or all back to the composer).
        await host.send_queue.turn_ended({conversation_id, view.conversation_id}, view.done_status)
