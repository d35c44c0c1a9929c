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
        return _search(args)
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


def _search(args: argparse.Namespace) -> int:
    """One page of hits, newest first: id, date, conversation, role, snippet; the next page's command on stderr."""
    from tui_agent.core.store.search import QueryError

    try:
        page = history.search(args.query, before=getattr(args, "before", None))
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for hit in page.hits:  # one line a hit: tabs and newlines inside are spaces
        title = visible(" ".join(hit.title.split())) or "(untitled)"
        print(
            f"{hit.message_id}\t{visible(hit.created_at[:16])}\tconversation {hit.conversation_id}: {title}"
            f"\t{visible(hit.role)}\t{visible(' '.join(hit.snippet.split()))}"
        )
    if page.before is not None:
        import shlex

        looked = "" if page.complete else f" (this page looked back to message {page.searched_to})"
        print(
            f"more{looked}: tui-agent history search {shlex.quote(args.query)} --before {page.before}", file=sys.stderr
        )
    if not page.hits:
        if page.before is None:
            print(f"no messages match {args.query!r}", file=sys.stderr)
        return 1
    return 0
