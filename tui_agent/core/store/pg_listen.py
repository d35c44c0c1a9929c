"""What other machines write, as it is committed: a thread with its own PostgreSQL connection that
LISTENs on the channel ``tui_agent`` (pg_migrations P5: a trigger announces every message stored or
changed and every conversation created, changed or deleted) and hands each change to a callback.

It reconnects by itself, with backoff, when the server goes away; after a reconnection it reports
``Change.reconnected()`` (what was announced meanwhile is lost: the reader looks again). No
Textual here: the UI (ui/live_updates.py) moves the changes to its event loop.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tui_agent.core.store.location import StoreURL

log = logging.getLogger("tui_agent.store")
CHANNEL = "tui_agent"
POLL_S = 0.25  # how often the thread looks whether it should stop
FIRST_DELAY_S = 0.2  # the backoff between connection attempts, doubled up to MAX_DELAY_S
MAX_DELAY_S = 5.0
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Change:
    """One announcement: ``kind`` "insert"/"update" (a message), "conversation" (``status``: insert,
    update or delete), "reconnected" (the connection was lost and made again: anything may have
    changed meanwhile) or "lost" (the connection ended)."""

    conversation_id: int | None
    message_id: int | None
    kind: str
    status: str | None = None
    origin: str = ""

    @classmethod
    def parse(cls, payload: str) -> Change | None:
        """The change a payload announces, or None (logged) for anything else. Any role can NOTIFY
        on the channel: a payload that is not a JSON object, an id that is not a whole number in
        range (``1e999``, ``10**400``, ``true``, ``"7"``), or a field of the wrong type is ignored."""
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            log.warning("a notification that is not tui-agent's: %.200r", payload)
            return None
        conversation, message = data.get("conversation"), data.get("message")
        kind, status, origin = data.get("kind", ""), data.get("status"), data.get("origin", "")
        if (
            not _id_or_none(conversation)
            or not _id_or_none(message)
            or not isinstance(kind, str)
            or not isinstance(origin, str)
            or not (status is None or isinstance(status, str))
        ):
            log.warning("a notification with fields out of shape, ignored: %.200r", payload)
            return None
        return cls(conversation, message, kind[:40], status[:40] if status is not None else None, origin[:200])

    @classmethod
    def reconnected(cls) -> Change:
        return cls(None, None, "reconnected")

    @classmethod
    def lost(cls) -> Change:
        """The connection ended (the server stopped, restarted or dropped it): the app looks."""
        return cls(None, None, "lost")


def _announces_schema(payload: str) -> bool:
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("kind") == "schema"


def _id_or_none(value: object) -> bool:
    """Nothing, or a row id as the database has them (a positive BIGINT; not a bool, not a float)."""
    return value is None or (type(value) is int and 0 < value < 2**63)


class Listener:
    """``start()`` it; ``deliver`` is called in the listener's thread for each change. It stops when
    ``stop()`` is called or ``alive()`` turns false (checked every POLL_S)."""

    def __init__(
        self,
        url: StoreURL,
        deliver: Callable[[Change], None],
        *,
        alive: Callable[[], bool] = lambda: True,
        application_name: str = "tui-agent listener",
    ) -> None:
        self.url = url
        self.deliver = deliver
        self.alive = alive
        self.application_name = application_name
        self.connected = threading.Event()  # set while LISTEN is in place
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Listener:
        self._thread = threading.Thread(target=self._run, name="tui-agent-listen", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _deliver(self, payload: str) -> None:
        """One notification: a bad one, or a failing callback, costs that one only (the connection
        and the notifications queued behind it stay)."""
        try:
            change = Change.parse(payload)
            if change is not None:
                self.deliver(change)
        except Exception:
            log.exception("live updates: delivering a change failed")

    @staticmethod
    def _check_schema(conn: Any) -> None:
        """Another machine says it upgraded the schema: the database itself says to which version
        (a NOTIFY alone proves nothing: any role can send one)."""
        from tui_agent.core.store import pg_migrations, schema_guard

        try:
            version = pg_migrations.current_version(conn)
        except Exception:  # the table gone or unreadable: nothing proved, nothing changed
            log.exception("live updates: reading the schema version failed")
            return
        if version > pg_migrations.LATEST:
            log.warning("the store's schema is now version %d (this tui-agent knows %d)", version, pg_migrations.LATEST)
            schema_guard.mark_newer(version)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() or not self.alive()

    def _run(self) -> None:
        import psycopg

        delay = FIRST_DELAY_S
        listened_before = False
        while not self.stopping:
            try:
                conn = psycopg.connect(
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_S,
                    application_name=self.application_name,
                    dbname=self.url.dbname,
                    **self.url.listener_args(),  # straight to the server (past a pooler)
                )
            except Exception as exc:  # the server is away (or the URL wrong: the app says so itself)
                log.info("live updates: cannot connect (%s); again in %.1f s", str(exc).splitlines()[0], delay)
                self._stop.wait(delay)
                delay = min(delay * 2, MAX_DELAY_S)
                continue
            try:
                conn.execute(f"LISTEN {CHANNEL}")
                self.connected.set()
                delay = FIRST_DELAY_S
                if listened_before:
                    log.info("live updates: listening again")
                    self.deliver(Change.reconnected())
                listened_before = True
                while not self.stopping:
                    announced = False  # a schema upgrade: checked once the notifications are read
                    for note in conn.notifies(timeout=POLL_S):
                        if _announces_schema(note.payload):
                            announced = True
                        else:
                            self._deliver(note.payload)
                        if self.stopping:
                            break
                    if announced:  # (the connection takes a query only outside notifies())
                        self._check_schema(conn)
            except psycopg.Error as exc:
                log.info("live updates: connection lost (%s)", str(exc).splitlines()[0] if str(exc) else exc)
                if not self.stopping:
                    self.deliver(Change.lost())
            except Exception:  # never expected here (_deliver keeps its own failures): listen again
                log.exception("live updates: the listener failed")
            finally:
                self.connected.clear()
                conn.close()
