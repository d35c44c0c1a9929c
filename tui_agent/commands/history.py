"""``tui-agent history list | search | revisions | restore | export | import``."""

from __future__ import annotations

import argparse
import sys

from tui_agent.core.session import open_session
from tui_agent.core.store import history
from tui_agent.core.textsafe import visible


def run_history(vault_arg: str | None, args: argparse.Namespace) -> int:
    session = open_session(vault_arg)
    if args.action in ("export", "import"):
        from tui_agent.commands.transfer import run_transfer

        return run_transfer(session.vault, args)
    if args.action == "list":
        for conversation in history.list_conversations():
            print(f"{conversation.id}\t{conversation.updated_at[:19]}\t{visible(conversation.title)}")
        return 0
    if args.action == "search":
        hits = history.search_messages(args.query)
        for message_id, conversation_id, role, snippet in hits:
            print(f"{message_id}\tconversation {conversation_id}\t{role}\t{visible(snippet)}")
        if not hits:
            print(f"no messages match {args.query!r}", file=sys.stderr)
            return 1
        return 0
    if args.action == "revisions":
        for revision in history.list_revisions(args.message):
            preview = visible(" ".join(revision.content.split())[:80])
            print(
                f"{revision.id}\tmessage {revision.message_id}\t{revision.created_at[:19]}"
                f"\t{visible(revision.reason)}\t{preview}"
            )
        return 0
    try:
        message = history.restore_revision(args.id)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"restored revision {args.id} into message {message.id}")
    return 0
