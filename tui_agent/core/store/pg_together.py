"""Statements sent together to a PostgreSQL server: one simple query, one round trip.

Not psycopg's pipeline mode: leaving a pipeline sends a Sync and then, when its answer has not
arrived yet, a Flush. Through PgBouncer in transaction mode the Sync's answer gives the server
connection back to the pool, and the late Flush takes one again and is never answered: the
connection stays held by an idle client, and with a pool of one every other client waits the
pooler's ``query_wait_timeout`` (tests/store/test_pgbouncer.py, under load). The statements are
bound here by psycopg's own client-side binding (``ClientCursor.mogrify``: the server's quoting
rules, read from the connection) and go as one simple query: one message, one answer, one round
trip; the server runs them in one implicit transaction (all or none), and ends it before it
answers, so a pooler lets the connection go at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import peewee as pw
import psycopg

from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.results import Result, Statement, result_of

log = logging.getLogger("tui_agent.store")


def in_one_query(
    db: pw.Database, statements: Sequence[Statement], atomic: bool, *, repeatable: bool = False
) -> list[Result]:
    """``together`` for a server: one simple query (the PostgreSQL backend's), always one
    transaction (``atomic`` asks nothing more of it); ``repeatable``: see batch.together."""
    from tui_agent.core.store import pg, schema_guard

    reads = all(pg.is_read(sql) for sql, _ in statements)
    if not reads and (reason := schema_guard.refusal()) is not None:
        raise StoreError(reason)
    sent = [(sql, params if params is not None else ()) for sql, params in statements]
    # ``atomic`` needs nothing more: one simple query with several statements is one transaction.
    try:
        results = _send(db, sent)
    except (pw.OperationalError, pw.InterfaceError) as exc:
        # A read whose connection the server had ended goes again, once, on a new connection (as
        # pg.ReconnectingDatabase does for one statement); a write is never sent twice, unless
        # sending it again comes to the same end (``repeatable``).
        if not (reads or repeatable) or db.in_transaction() or db.is_connection_usable():
            raise
        log.info("the server ended the connection (%s): the statements go again on a new one", exc)
        results = _send(db, sent)
    return results


def _send(db: pw.Database, sent: list[tuple[str, Any]]) -> list[Result]:
    conn = db.connection()  # a connection found dead is let go of first (pg.ReconnectingDatabase)
    # peewee's own mapping of driver errors to its classes (what its cursor raises; not in its stubs).
    with pw.ExceptionWrapper(pw.EXCEPTIONS):  # type: ignore[attr-defined]
        cursor = psycopg.ClientCursor(conn)
        query = "\n;\n".join(cursor.mogrify(sql, params).rstrip().rstrip(";") for sql, params in sent)
        try:
            cursor.execute(query)
            results = [result_of(cursor)]
            while cursor.nextset():
                results.append(result_of(cursor))
        except Exception:
            if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()  # a transaction left open around the statements
            raise
        finally:
            cursor.close()
    if len(results) != len(sent):  # one statement's SQL held several: the results do not line up
        raise pw.ProgrammingError(f"{len(sent)} statements sent together returned {len(results)} results")
    return results
