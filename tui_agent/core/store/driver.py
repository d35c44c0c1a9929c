"""peewee without PostgreSQL's driver until a PostgreSQL store is opened.

peewee imports psycopg when it is imported itself, if psycopg is installed: 120 ms (psycopg_binary
reads its own metadata, loads ssl and asyncio) on every start of every SQLite user. ``import_peewee``
imports peewee with psycopg hidden, so that peewee takes it for absent; ``load_psycopg`` imports it
when a ``postgresql://`` store is opened and hands peewee the four names it would have bound then
(``psycopg``, ``TransactionStatus``, ``Json_pg3``, ``Jsonb_pg3``: module globals that peewee's
PostgreSQL code reads when it runs; tests/store/test_store_driver.py proves they still exist and work),
and the three transaction states of its psycopg 3 adapter.
"""

from __future__ import annotations

import sys
from types import ModuleType

PEEWEE_NAMES = ("psycopg", "TransactionStatus", "Json_pg3", "Jsonb_pg3")


def import_peewee() -> ModuleType:
    """peewee, imported (if it was not yet) as if psycopg were not installed."""
    if "peewee" in sys.modules:
        return sys.modules["peewee"]
    hidden = "psycopg" not in sys.modules
    if hidden:
        sys.modules["psycopg"] = None  # type: ignore[assignment]  # `import psycopg` raises ImportError
    try:
        import peewee
    finally:
        if hidden:
            del sys.modules["psycopg"]
    return peewee


def load_psycopg() -> None:
    """Import psycopg (raises ImportError when it is not installed) and give peewee its names."""
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.types.json import Json, Jsonb

    peewee = import_peewee()
    if getattr(peewee, "psycopg", None) is None:
        peewee.psycopg = psycopg  # type: ignore[attr-defined]
        peewee.TransactionStatus = TransactionStatus  # type: ignore[attr-defined]
        peewee.Json_pg3 = Json  # type: ignore[attr-defined]
        peewee.Jsonb_pg3 = Jsonb  # type: ignore[attr-defined]
        # And the adapter's transaction states, class attributes peewee sets only when psycopg was
        # there at its import (is_connection_usable compares with them: None raised TypeError).
        adapter = peewee.Psycopg3Adapter
        adapter.txn_idle = TransactionStatus.IDLE
        adapter.txn_inerror = TransactionStatus.INERROR
        adapter.txn_unknown = TransactionStatus.UNKNOWN
