"""Statements sent together: one round trip to a PostgreSQL server far away (issue 35 item 3).

``together`` runs a list of statements and returns what each returned. On PostgreSQL they go in one
simple query (store/results.py says why not a pipeline): sent at once, answered at once (a server
50 ms away costs 50 ms for all of them, not 50 ms each), in one transaction; on SQLite (a file on
this machine) one after the other. A statement may use what an earlier one wrote (the server runs
them in order), not what it returned: that comes back only at the end. A statement with its
parameters in a mapping names them ``{name}`` in its SQL (bound here by
``Store.bind``: each backend writes its own placeholder); each backend runs them (``Store.together``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import peewee as pw

from tui_agent.core.store.results import Result, Statement

__all__ = ["Result", "Statement", "together"]


def together(
    db: pw.Database, statements: Sequence[Statement], *, atomic: bool = False, repeatable: bool = False
) -> list[Result]:
    """What each statement returned (no rows for one that returns none), in order; ``atomic``:
    all of them in one transaction. ``repeatable``: the writes among them come to the same end
    when sent twice (an upsert of one value): on a connection the server had ended they go again,
    once, as reads do (a write otherwise is never sent twice). A failure raises the driver's error
    as peewee raises it (``errors.DATABASE_ERRORS``), and rolls the transaction back."""
    from tui_agent.core.store import backends

    store = backends.of(db)
    bound = [(store.bind(sql), params) if isinstance(params, Mapping) else (sql, params) for sql, params in statements]
    return list(store.together(bound, atomic, repeatable=repeatable))
