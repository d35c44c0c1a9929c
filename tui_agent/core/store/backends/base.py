"""The store as one value: what the app asks of it, in its own terms, whatever the backend.

``backends.open(url)`` picks the implementation once, from the store URL (``sqlite.py``,
``postgres.py``); the rest of the code asks ``backends.current()`` (the store the models are bound
to) and never which backend it is. Each implementation writes its own SQL where the two differ, or
lets peewee build it; hand-written SQL shared by both uses ``param`` (peewee's ``Database.param``)
for its placeholders: nothing is translated by pattern.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import peewee as pw

from tui_agent.core.store.errors import StoreError
from tui_agent.core.store.location import StoreURL

if TYPE_CHECKING:
    from tui_agent.core.store.pg_listen import Change, Listener
    from tui_agent.core.store.search import Page
    from tui_agent.core.tools.sql_run import Request

Q = TypeVar("Q", bound=pw.Query)


@dataclass(frozen=True)
class MemoryRunner:
    """How memory_sql runs a statement on this store: the SQL it takes (told to the model), the
    module the worker process runs it with (``run_guarded(request)``), the modules the worker loads
    before its limits start, and ``prepare``, which readies the store and the request (returns ""
    or one line saying why the statement cannot run)."""

    dialect: str
    module: str
    preload: tuple[str, ...] = ()
    prepare: Callable[[Request], str] = field(default=lambda request: "")


class _Named(dict[str, str]):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def __missing__(self, key: str) -> str:
        return self.store.named(key)


class Store(ABC):
    """One open store. ``database`` is the peewee database the models are bound to."""

    #: For people: what kind of store this is ("SQLite", "PostgreSQL").
    name: ClassVar[str]
    #: Several machines share it: pictures are kept in it, other processes' changes are followed,
    #: its connections are counted by its server (released when idle).
    shared: ClassVar[bool]
    #: Pictures are kept in the store (the vault's media/ is a cache), so that every machine sees them.
    keeps_pictures: ClassVar[bool] = False
    #: memory_sql needs a role and views made in the store first (``tui-agent db setup``).
    memory_needs_setup: ClassVar[bool] = False

    def __init__(self, database: pw.Database, url: StoreURL) -> None:
        self.database = database
        self.url = url

    # ------------------------------------------------------------------ opening
    @classmethod
    @abstractmethod
    def open(cls, url: StoreURL, *, target_version: int | None = None) -> Store:
        """Open (creating if needed), check, migrate and bind the models to the store ``url`` names."""

    @classmethod
    @abstractmethod
    def open_read_only(cls, url: StoreURL) -> Store:
        """Open the store ``url`` names to read only (a copy's source), checked to be a tui-agent
        store this tui-agent can read; nothing bound, nothing migrated."""

    @abstractmethod
    def migrate(self, target_version: int | None = None) -> None:
        """Bring the schema to ``target_version`` (the newest by default)."""

    def close(self) -> None:
        self.database.close()

    # ----------------------------------------------------------------- naming
    def where(self) -> str:
        """How messages name the store: its file, or user@host:port/dbname (never a password)."""
        return self.url.where()

    @abstractmethod
    def identity(self) -> str:
        """The store as this machine names it, stable across runs (approvals are kept per store)."""

    # ------------------------------------------------------------ statements
    @property
    def param(self) -> str:
        """The placeholder of hand-written SQL on this store (peewee's ``Database.param``)."""
        return str(self.database.param)

    def placeholders(self, count: int) -> str:
        """``count`` placeholders, comma-separated (an IN list, a VALUES row)."""
        return ", ".join([self.param] * count)

    @abstractmethod
    def named(self, name: str) -> str:
        """The placeholder of the parameter ``name``, for SQL whose parameters come as a mapping
        (a value used twice is named twice, not sent twice)."""

    def bind(self, sql: str) -> str:
        """``sql`` with each ``{name}`` made this store's placeholder of that name (``named``)."""
        return sql.format_map(_Named(self))

    def positional(self, sql: str, values: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """``sql`` with each ``{name}`` made this store's positional placeholder, and the values in
        the order the placeholders stand (for APIs that take parameters in order: peewee's raw)."""
        import string

        names = [name for _text, name, _spec, _conv in string.Formatter().parse(sql) if name is not None]
        return sql.format_map({name: self.param for name in names}), [values[name] for name in names]

    @abstractmethod
    def row_lock(self, table: str, key: str) -> list[str]:
        """Statements (to ``bind``) that lock the row of ``table`` whose id is the parameter named
        ``key`` for this transaction (none where every transaction takes the write lock)."""

    @abstractmethod
    def last_id(self, table: str) -> str:
        """An SQL expression: the id the last INSERT into ``table`` made, in this session."""

    @abstractmethod
    def together(self, statements: Sequence[tuple[str, Any]], atomic: bool, *, repeatable: bool = False) -> list[Any]:
        """Run ``statements`` (SQL and parameters) in order, in one round trip where the backend
        can (store/batch.py); each one's batch.Result. ``repeatable``: they may be sent again
        on a new connection when the server had ended the old one (batch.together)."""

    def execute(self, sql: str, params: Any = ()) -> Any:
        """Run hand-written SQL whose placeholders are ``param`` (or ``named``, with a mapping);
        returns the cursor."""
        return self.database.execute_sql(sql, params if isinstance(params, Mapping) else tuple(params))

    def upsert(self, model: type[pw.Model], **values: Any) -> None:
        """Insert the row, or replace the values of the row with the same primary key."""
        meta = model._meta
        keys = meta.get_primary_keys()
        key_names = {key.name for key in keys}
        update = {meta.fields[name]: value for name, value in values.items() if name not in key_names}
        model.insert(**values).on_conflict(conflict_target=list(keys), update=update).execute()

    @abstractmethod
    def for_update(self, query: Q) -> Q:
        """``query`` locking the rows it reads for this transaction, where the backend needs it."""

    @abstractmethod
    def serialize(self, key: int) -> None:
        """Inside a transaction: wait until no other writer holds ``key`` (released at commit)."""

    @abstractmethod
    @contextmanager
    def lock_wait(self, milliseconds: int) -> Iterator[None]:
        """A transaction whose writes wait at most ``milliseconds`` for another writer's row
        locks; one that waited longer raises :class:`WriteBlocked`."""

    @abstractmethod
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read-only transaction: every read inside sees the same rows."""

    # ----------------------------------------------------------------- search
    @abstractmethod
    def search(self, query: str, *, before: int | None, limit: int) -> Page:
        """A page of full-text hits on the app's connection (see store/search.py)."""

    @abstractmethod
    def search_reader(self) -> SearchReader:
        """A connection of its own for searching off the event loop, each search cancellable."""

    # -------------------------------------------------------------- memory_sql
    @abstractmethod
    def memory_runner(self) -> MemoryRunner:
        """How memory_sql runs its statements on this store."""

    def prepare_memory(self) -> str:
        """ "" when memory_sql can run on this store (what it needs made now, if this user may),
        else one line saying why not."""
        return ""

    def set_up_memory(self, members: list[str]) -> str:
        """Make what memory_sql needs, for ``members`` (default: this user); returns the line that
        says what was done, raises StoreError (one line) when it cannot."""
        raise StoreError(f"the {self.name} store {self.where()} needs no set-up for memory_sql")

    # ------------------------------------------------------------ the changes
    @abstractmethod
    def origin(self) -> str | None:
        """What this process's own writes carry (skipped when they come back), or None when the
        store has no other writers to follow."""

    @abstractmethod
    def listen(self, on_change: Callable[[Change], None], *, alive: Callable[[], bool]) -> Listener | None:
        """Follow other processes' writes (``on_change`` runs on the listener's thread); None when
        there is nothing to follow."""

    # ---------------------------------------------------- the end, the health
    @classmethod
    @abstractmethod
    def connect_quickly(cls, url: StoreURL) -> Any:
        """A DB-API connection of its own to the store ``url`` names, that gives up quickly (the
        last write of an app being ended: ui/lifeline.py; no store need be open)."""

    #: The placeholder of a ``connect_quickly`` connection's SQL (its driver's DB-API paramstyle).
    QUICK_PARAM: ClassVar[str]

    def health(self) -> str | None:
        """None when the store answers a query now, else one line saying why not."""
        from tui_agent.core.store.errors import DATABASE_ERRORS, describe

        try:
            self.database.execute_sql("SELECT 1").fetchone()
        except DATABASE_ERRORS as exc:
            return str(describe(exc, self.where()))
        return None

    def release_idle(self) -> None:
        """The calling thread's connection goes when the store is idle, where a server counts them."""
        if self.shared and not self.database.is_closed() and not self.database.in_transaction():
            self.database.close()

    # ----------------------------------------------------------------- copying
    @abstractmethod
    def columns(self, table: str) -> dict[str, str] | None:
        """Column name -> declared type, in the table's order; None when there is no such table."""

    @abstractmethod
    def after_copy(self, table: str, key: str) -> None:
        """Rows were inserted with their ids: what the backend needs so that new rows get new ids."""


def check_source_version(version: int, latest: int, where: str, database: pw.Database) -> None:
    """A store to read (a copy's source) has a tui-agent schema this tui-agent knows."""
    if version == 0:
        database.close()
        raise StoreError(f"the source {where} is not a tui-agent store (it has no tui-agent schema)")
    if version > latest:
        database.close()
        raise StoreError(
            f"the source {where} was written by a newer tui-agent (schema {version}, this one knows {latest}): "
            "upgrade tui-agent (pip install -U tui-agent) and copy again"
        )


class WriteBlocked(Exception):
    """Another writer held a row longer than the transaction would wait; nothing was written."""


class SearchReader(ABC):
    """A connection of its own for searches, each cancellable from another thread."""

    @abstractmethod
    def page(self, query: str, before: int | None, stop: Callable[[], bool]) -> Page:
        """A page of hits; raises SearchCancelled once ``stop()`` is true."""

    @abstractmethod
    def cancel(self, stop: Callable[[], bool]) -> None:
        """From another thread: stop the statement of the search ``stop`` was given to, if it
        is still running (never the search after it)."""

    @abstractmethod
    def close(self) -> None: ...
