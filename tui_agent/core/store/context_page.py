"""The rows a request to the model is built from, read in one statement (issue 35 item 3).

The context builder needs the newest messages of the active branch until their text exceeds its
token budget. Read in steps of a fixed size (64 rows, then more), a long conversation of short
messages paid a round trip a step; reading the whole window (400 rows) every turn cost what the
budget then left out. Here the walk up the branch (``branches.PATH_TEMPLATE``'s) adds up each
message's estimated tokens as it goes and stops at the first message that takes the sum over the
budget, so the server returns what the budget can use and one unit more, in the round trip that
reads them, at any length.

Where it stops is where ``ContextBuilder`` would stop (core/context.py keeps what fits): at a
message that starts a unit (never on a tool result, whose assistant message is older), once the
latest user message was read (it is always sent), the rows ``EXCLUDED_*`` leave out costing
nothing. Tokens are estimated as ``context._cost`` does from the text alone: characters // 4 of
the content and of the tool calls, + 4 a message (a SQL ``length`` counts characters too).
"""

from __future__ import annotations

from typing import Any

from tui_agent.core.store.branches import CONVERSATION_START, PAGE_SQL, page_reads

CHARS_PER_TOKEN = 4
EXCLUDED_ROLES = frozenset({"error", "system"})
EXCLUDED_STATUSES = frozenset({"superseded"})  # a broken-off reply that was retried


def _listed(values: frozenset[str]) -> str:
    return ", ".join(f"'{value}'" for value in sorted(values))  # constants of this module, not input


# path(id, wanted, cost, users): ``cost`` the tokens of the messages newer than ``id`` on the path,
# ``users`` how many of them are user messages. A step reads the row of ``path.id`` (``step``) and
# goes on to its parent unless that row is sent (cost > 0), starts a unit, is past the budget with
# the rows after it, and the latest user message was read (it or one newer).
BUDGET_PATH = f"""
WITH RECURSIVE path(id, wanted, cost, users) AS (
    SELECT start.leaf, 1, CAST(0 AS BIGINT), 0 FROM {CONVERSATION_START} AS start
    UNION ALL
    SELECT step.parent, path.wanted + 1, path.cost + step.cost, path.users + step.user_message
    FROM path JOIN (
        SELECT m.id AS id, COALESCE(m.parent_id, (
            SELECT max(p.id) FROM messages p WHERE p.conversation_id = m.conversation_id AND p.id < m.id
        ), 0) AS parent,
        CASE WHEN m.role IN ({_listed(EXCLUDED_ROLES)}) OR m.status IN ({_listed(EXCLUDED_STATUSES)})
            OR (m.status = 'streaming' AND COALESCE(m.content, '') = '') THEN 0
            ELSE length(COALESCE(m.content, '')) / {CHARS_PER_TOKEN}
                + length(COALESCE(m.tool_calls, '')) / {CHARS_PER_TOKEN} + 4 END AS cost,
        CASE WHEN m.tool_call_id IS NOT NULL AND m.role != 'assistant' THEN 0 ELSE 1 END AS opens,
        CASE WHEN m.role = 'user' THEN 1 ELSE 0 END AS user_message
        FROM messages m
    ) AS step ON step.id = path.id
    WHERE step.parent != 0 AND path.wanted < {{limit}}
        AND (step.cost = 0 OR step.opens = 0 OR path.cost + step.cost <= {{budget}}
            OR path.users + step.user_message = 0)
)
"""


def statements(conversation_id: int, limit: int, budget_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    """Three statements (store/batch.py sends them together), as ``branches.page_statements``'s:
    the messages (``SELECT *``, oldest first) the request can use out of the newest ``limit`` of
    the conversation's active branch within ``budget_tokens`` (see above), their pictures (message
    id, path) in order, and the children of their parents (id, parent id, role)."""
    params = {"conversation": conversation_id, "limit": limit, "budget": budget_tokens}
    return page_reads(BUDGET_PATH + PAGE_SQL.replace("{older}", ""), params)
