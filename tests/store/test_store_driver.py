"""PostgreSQL's driver is loaded only for a PostgreSQL store (store/driver.py), and peewee still
reads the four names we hand it when it is."""

from __future__ import annotations

import json
import subprocess
import sys

from tui_agent.core.store.driver import PEEWEE_NAMES


def run(code: str) -> object:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a_sqlite_store_never_imports_psycopg(tmp_path):
    code = (
        "import sys, json\n"
        "from tui_agent.core.store import location\n"
        "from tui_agent.core.store.db import open_store\n"
        f"open_store(location.parse('sqlite://{tmp_path}/a.db')).close()\n"
        "print(json.dumps('psycopg' in sys.modules))"
    )
    assert run(code) is False


def test_peewee_has_the_names_it_binds_when_psycopg_is_there_at_its_import():
    """The names peewee binds at import (with psycopg importable) are the ones load_psycopg sets:
    if peewee renames one, this fails, and load_psycopg must follow."""
    code = (
        "import sys, json, psycopg\n"
        "import peewee\n"
        f"print(json.dumps([n for n in {PEEWEE_NAMES!r} if getattr(peewee, n, None) is None]))"
    )
    assert run(code) == []


def test_load_psycopg_gives_peewee_the_same_names_as_its_own_import():
    code = (
        "import sys, json\n"
        "from tui_agent.core.store.driver import import_peewee, load_psycopg, PEEWEE_NAMES\n"
        "peewee = import_peewee()\n"
        "before = [n for n in PEEWEE_NAMES if getattr(peewee, n, None) is not None]\n"
        "load_psycopg()\n"
        "import psycopg\n"
        "from psycopg.pq import TransactionStatus\n"
        "ok = peewee.psycopg is psycopg and peewee.TransactionStatus is TransactionStatus\n"
        "print(json.dumps([before, ok, 'psycopg' in sys.modules]))"
    )
    assert run(code) == [[], True, True]


def test_load_psycopg_gives_the_adapter_its_transaction_states_as_its_own_import_does():
    """peewee's psycopg 3 adapter reads three class attributes set at peewee's import only if
    psycopg was there (its connection checks compare with them: a dropped connection is found by
    them, store/pg.ReconnectingDatabase)."""
    states = "[str(getattr(peewee.Psycopg3Adapter, n)) for n in ('txn_idle', 'txn_inerror', 'txn_unknown')]"
    own = run(f"import json, psycopg, peewee\nprint(json.dumps({states}))")
    code = (
        "import json\n"
        "from tui_agent.core.store.driver import import_peewee, load_psycopg\n"
        "peewee = import_peewee()\n"
        "load_psycopg()\n"
        f"print(json.dumps({states}))"
    )
    assert run(code) == own
    assert "None" not in own
