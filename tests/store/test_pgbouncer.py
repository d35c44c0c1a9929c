"""Through PgBouncer in transaction mode (issue 35 item 5): many apps share a few server
connections; a server connection goes to whichever client has a transaction to run, so nothing a
client leaves in a server session may be counted on by the next statement. psycopg 3 prepares a
statement on the server after its fifth run (named ``_pg3_0``, ``_pg3_1``... per client
connection): through a pool, two clients' statements of the same name meet on one server
connection. Debian 12's PgBouncer is 1.18, which does not track prepared statements (1.21 does,
with ``max_prepared_statements``): the store prepares none (``pg.connect_database``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from pg_cluster import Cluster, free_port

from tui_agent.core.store import history, location, pages
from tui_agent.core.store.db import open_store

INSTALL = "PgBouncer is not installed: apt-get install pgbouncer"


@contextmanager
def running_bouncer(cluster: Cluster, **settings: int) -> Iterator[int]:
    """PgBouncer in transaction mode in front of ``cluster``, with ONE server connection per
    database (so two clients always share it); its port. ``settings``: more of its own."""
    program = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None)
    if program is None:
        pytest.skip(INSTALL)
    folder = Path(tempfile.mkdtemp(prefix="tui-agent-pgbouncer-", dir="/tmp"))
    shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    config = folder / "pgbouncer.ini"
    # A client waiting longer than query_wait_timeout for the one server connection fails (the
    # default, 120 s, hid a connection held by an idle client as a slow test): see core/store/results.py.
    options = {"query_wait_timeout": 10, **settings}
    config.write_text(
        "[databases]\n"
        f"* = host=127.0.0.1 port={cluster.port} user=postgres\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        "auth_type = any\npool_mode = transaction\ndefault_pool_size = 1\n"
        + "".join(f"{name} = {value}\n" for name, value in options.items())
        + f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
    )
    process = subprocess.Popen(["runuser", "-u", "postgres", "--", program, str(config)])
    try:
        deadline = time.monotonic() + 30
        while "listening on" not in _log(folder) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def bouncer(pg_cluster: Cluster) -> Iterator[int]:
    """PgBouncer in front of the test cluster (``running_bouncer``); its port."""
    with running_bouncer(pg_cluster) as port:
        yield port


def wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.05)


def _log(folder: Path) -> str:
    try:
        return (folder / "pgbouncer.log").read_text()
    except OSError:
        return ""


def test_two_clients_sharing_one_server_connection_through_pgbouncer(pg_url, pg_cluster, bouncer):
    """The store set up (migrated) through PgBouncer, then two clients' statements alternating on
    its one server connection. Each client's statements sent together must leave the connection
    free when its answer is in: psycopg's pipeline sent a Flush after its Sync when the answer was
    late (a loaded machine), PgBouncer gave that Flush the server connection after the Sync's
    answer had released it, and the other client waited for it until ``query_wait_timeout``."""
    db = open_store(location.parse(pg_url.replace(f":{pg_cluster.port}/", f":{bouncer}/")))
    first, second = ThreadPoolExecutor(1), ThreadPoolExecutor(1)  # a connection each (peewee: per thread)
    try:
        mine = first.submit(history.new_conversation, "first").result().id
        theirs = second.submit(history.new_conversation, "second").result().id
        for i in range(8):  # past psycopg's threshold for preparing (5 runs of a statement)
            first.submit(history.add_message, mine, "user", f"mine {i}").result()
            second.submit(history.add_message, theirs, "user", f"theirs {i}").result()
            page = first.submit(pages.opened, mine, 20).result()
            assert page.title == "first" and [m.content for m in page.rows][-1] == f"mine {i}"
            page = second.submit(pages.opened, theirs, 20).result()
            assert page.title == "second" and len(page.rows) == i + 1
        last = second.submit(history.last_conversation).result()
        assert last is not None and last.id == theirs
    finally:
        for executor in (first, second):
            executor.submit(db.close).result()
            executor.shutdown()


def test_the_listener_goes_straight_to_the_server_past_pgbouncer(pg_url, pg_cluster, bouncer):
    """One URL for both: the store's statements through PgBouncer, the listener (LISTEN, which
    transaction pooling does not carry) to the server named by ``listen_host``/``listen_port``."""
    from tui_agent.core.store.pg_listen import Change, Listener

    url = location.parse(
        pg_url.replace(f":{pg_cluster.port}/", f":{bouncer}/") + f"?listen_host=127.0.0.1&listen_port={pg_cluster.port}"
    )
    assert "listen_port" not in url.connect_args() and url.connect_args()["port"] == bouncer
    assert url.listener_args()["port"] == str(pg_cluster.port)
    db = open_store(url)  # libpq would refuse an option it does not know: the store's are libpq's
    got: list[Change] = []
    listener = Listener(url, got.append, application_name="another machine's listener").start()
    try:
        wait_for(listener.connected.is_set, "the listener never connected")
        conversation = history.new_conversation("seen live")
        message = history.add_message(conversation.id, "user", "hello")
        wait_for(lambda: any(c.message_id == message.id for c in got), f"the message never arrived: {got}")
    finally:
        listener.stop()
        db.close()


@pytest.mark.slow
def test_the_server_gone_behind_pgbouncer_is_an_outage(own_cluster):
    """Seen in tmux (two apps through PgBouncer, issue 35): the server stopped mid-reply and
    PgBouncer, still up, answered the reply's next save with ``query_wait_timeout`` and every new
    connection with ``server login has been failing ... (server_login_retry)``. Neither was known
    for an outage: the app showed "The vault's database failed" instead of waiting for the server,
    and the cut reply stayed ``streaming`` for every machine after the server was back (its own
    screen said "a reply is running in this conversation on another machine")."""
    from tui_agent.core.store import errors, recovery

    with running_bouncer(own_cluster, query_wait_timeout=1, server_login_retry=1) as port:
        url = os.environ["TUI_AGENT_DB"].replace(f":{own_cluster.port}/", f":{port}/")
        db = open_store(location.parse(url))
        try:
            conversation = history.new_conversation("before the outage")
            own_cluster.stop("fast")
            seen = []
            for _ in range(3):  # the waiting query's answer, then new connections' answers
                with pytest.raises(errors.STORE_FAILURES) as failed:
                    history.add_message(conversation.id, "user", "while the server is away")
                seen.append(str(failed.value))
                described = errors.describe(failed.value)
                assert errors.is_unreachable(failed.value), seen
                assert errors.is_unreachable(described) and "cannot reach PostgreSQL" in str(described), described
            own_cluster.start()
            wait_for(_answers(recovery.ping), "the store never answered through PgBouncer again")
            history.add_message(conversation.id, "user", "after the outage")
            assert [m.content for m in history.recent_messages(conversation.id, 10)] == ["after the outage"]
        finally:
            db.close()


def _answers(call):  # type: ignore[no-untyped-def]
    def answered() -> bool:
        try:
            call()
        except Exception:
            return False
        return True

    return answered
