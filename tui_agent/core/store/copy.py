"""``tui-agent db copy SRC DST``: every row and every picture of one store into another (SQLite or
PostgreSQL, either way), ids and branches kept.

The rules:
- The source is opened read-only and never migrated: an older schema is read as it is (the columns
  it lacks take their defaults, as its own upgrade would give them); a newer one, or a database
  that is not a tui-agent store, is refused. Everything is read in one snapshot.
- The destination is opened as the app opens it (created, or brought to this tui-agent's schema;
  a newer schema is refused, nothing written).
- Idempotent: a row already in the destination with the same key and the same values is skipped.
  Settings (the active profile, the last conversation, the theme: the preferences of whoever uses
  a store) already in the destination keep the destination's value.
  A row with the same key (or profile / MCP server name) but other values is a conflict: the copy
  is refused before anything is written, naming the table and the id. The same for a picture path
  that holds other bytes in the destination. A copy is a move or a backup, not a sync.
- Everything is written in one transaction of the destination: an interrupted copy leaves nothing
  (a SQLite destination's picture files excepted: they are only ever added, never replaced).
- PostgreSQL numbers new rows after the copied ids (its identity sequences are moved past them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import peewee as pw

from tui_agent.core.store import backends
from tui_agent.core.store import copy_tables as tables
from tui_agent.core.store.copy_media import Pictures, picture_paths, safe_relative
from tui_agent.core.store.errors import DATABASE_ERRORS, StoreError, describe
from tui_agent.core.store.location import StoreURL
from tui_agent.core.store.models import MODELS, Message

NOTHING_WRITTEN = "refused, nothing written"


class Progress(Protocol):
    def phase(self, name: str, total: int) -> None: ...

    def advance(self, count: int) -> None: ...


class _Quiet:
    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


@dataclass
class CopyReport:
    copied: dict[str, int] = field(default_factory=dict)  # table -> rows written
    skipped: dict[str, int] = field(default_factory=dict)  # table -> rows already there
    pictures_copied: int = 0
    pictures_skipped: int = 0
    pictures_missing: list[str] = field(default_factory=list)  # named by the source, found nowhere
    pictures_refused: list[str] = field(default_factory=list)  # a path no picture may have
    kept: int = 0  # settings already in the destination with another value, left as they were

    def summary(self) -> str:
        conversations = self.copied.get("conversations", 0)
        messages = self.copied.get("messages", 0)
        others = sum(self.copied.values()) - conversations - messages
        skipped = sum(self.skipped.values()) + self.pictures_skipped
        kept = f" ({self.kept} of them settings the destination has its own value for)" if self.kept else ""
        return (
            f"copied {conversations} conversations, {messages} messages, {self.pictures_copied} pictures "
            f"and {others} other rows; skipped {skipped} already there{kept}"
        )


@dataclass
class _Plan:
    table: tables.Table
    names: list[str]
    kinds: list[str]
    rows: int
    skip: set[tuple[Any, ...]] = field(default_factory=set)
    kept: int = 0


def vault_of(url: StoreURL, current_vault: Path) -> Path | None:
    """The vault folder whose media/ holds a store's picture files: a SQLite file named agent.db is
    its folder's store; any other file, and a PostgreSQL store (whose media/ is a cache), use the
    current vault (--vault)."""
    if url.path is not None and url.path.name == "agent.db":
        return url.path.parent
    return current_vault


def same_store(a: StoreURL, b: StoreURL) -> bool:
    if a.kind != b.kind:
        return False
    if a.path is not None and b.path is not None:
        if a.path.resolve() == b.path.resolve():
            return True
        try:
            return os.path.samefile(a.path, b.path)
        except OSError:
            return False

    def where(url: StoreURL) -> tuple[str, int, str]:
        host = url.host or "localhost"
        return ("localhost" if host in ("127.0.0.1", "::1") else host, url.port or 5432, url.dbname)

    return where(a) == where(b)


def open_source(url: StoreURL) -> pw.Database:
    """The source, read-only, checked to be a tui-agent store this tui-agent can read."""
    where = url.where()
    try:
        return _named_in_errors(backends.backend_for(url).open_read_only(url).database, where)
    except StoreError:
        raise
    except DATABASE_ERRORS as exc:
        raise describe(exc, where) from None


def _named_in_errors(db: pw.Database, where: str) -> pw.Database:
    """A failure of a statement on the source names the source (the copy's other failures name
    the destination, where they mostly happen)."""
    plain = db.execute_sql

    def execute_sql(sql: str, params: Any = None) -> Any:
        try:
            return plain(sql, params)
        except DATABASE_ERRORS as exc:
            raise describe(exc, f"the source {where}") from None

    db.execute_sql = execute_sql  # type: ignore[method-assign]
    return db


def open_destination(url: StoreURL) -> pw.Database:
    """The destination, opened as the app opens it (made, or migrated), without taking the models'
    binding from whatever they were bound to."""
    from tui_agent.core.store.db import open_store

    if url.path is not None:
        try:
            url.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot make the folder of {url.path}: {exc.strerror or exc}") from None
    previous = Message._meta.database
    try:
        return open_store(url)
    finally:
        if previous is not None:
            previous.bind(MODELS, bind_refs=False, bind_backrefs=False)


def copy_store(
    source_url: StoreURL, destination_url: StoreURL, *, current_vault: Path, progress: Progress | None = None
) -> CopyReport:
    """Copy every row and picture; raises StoreError (one line) when it cannot or must not."""
    if same_store(source_url, destination_url):
        raise StoreError(f"the source and the destination are the same store ({source_url.where()}): nothing to copy")
    src = open_source(source_url)
    try:
        dst = open_destination(destination_url)
        try:
            src_root = vault_of(source_url, current_vault)
            dst_root = None if backends.of(dst).keeps_pictures else vault_of(destination_url, current_vault)
            return _copy(src, dst, src_root, dst_root, progress or _Quiet())
        except StoreError:
            raise
        except DATABASE_ERRORS as exc:
            raise describe(exc, destination_url.where()) from None
        except OSError as exc:  # a picture file that cannot be read or written
            raise StoreError(f"cannot copy: {exc}; {NOTHING_WRITTEN}") from None
        finally:
            dst.close()
    finally:
        src.close()


@contextmanager
def _snapshot(src: pw.Database) -> Iterator[None]:
    """One read transaction on the source: both passes see the same rows."""
    with backends.of(src).snapshot():
        yield


def _plans(src: pw.Database, dst: pw.Database) -> list[_Plan]:
    plans = []
    for table in tables.TABLES:
        theirs = tables.columns(src, table.name)
        if theirs is None:
            continue  # an older source without this table
        mine = tables.columns(dst, table.name) or {}
        extra = [name for name in theirs if name not in mine]
        if extra:
            raise StoreError(
                f"the source's {table.name} has column(s) {', '.join(extra)} the destination lacks: "
                f"upgrade tui-agent; {NOTHING_WRITTEN}"
            )
        names = [name for name in mine if name in theirs]
        plans.append(_Plan(table, names, [mine[name] for name in names], tables.count(src, table.name)))
    return plans


def _key_text(table: tables.Table, key: tuple[Any, ...]) -> str:
    return ", ".join(
        f"{name} {value!r}" if isinstance(value, str) else f"{name} {value}"
        for name, value in zip(table.key, key, strict=True)
    )


def _check_rows(src: pw.Database, dst: pw.Database, plan: _Plan, progress: Progress) -> int:
    """Find the rows already there (kept in ``plan.skip``) and refuse any conflict; return how many are new."""
    table, names, kinds = plan.table, plan.names, plan.kinds
    at = [names.index(name) for name in table.key]
    holders = tables.unique_values(dst, table)
    unique_at = names.index(table.unique) if table.unique in names else None
    new = 0
    for page in tables.pages(src, table, names):
        keys = [tuple(row[index] for index in at) for row in page]
        there = tables.existing(dst, table, names, keys)
        for row, key in zip(page, keys, strict=True):
            mine = tables.row_canon(row, kinds)
            other = there.get(key)
            if other is not None:
                theirs = tables.row_canon(other, kinds)
                if mine != theirs and table.theirs_win:
                    plan.kept += 1
                elif mine != theirs:
                    differ = [name for name, a, b in zip(names, mine, theirs, strict=True) if a != b]
                    raise StoreError(
                        f"conflict: {table.name} {_key_text(table, key)} is in both stores with different "
                        f"values ({', '.join(differ)}): {NOTHING_WRITTEN}; copy into an empty store, or "
                        "remove that row from one of them"
                    )
                plan.skip.add(key)
                continue
            if unique_at is not None:
                holder = holders.get(mine[unique_at])
                if holder is not None and holder != key:
                    raise StoreError(
                        f"conflict: {table.name} {_key_text(table, key)} is named {mine[unique_at]!r}, which the "
                        f"destination's {table.name} {_key_text(table, holder)} is named too: {NOTHING_WRITTEN}; "
                        "copy into an empty store, or rename one of them"
                    )
            new += 1
        progress.advance(len(page))
    return new


def _check_pictures(
    source: Pictures, destination: Pictures, paths: list[str], report: CopyReport, progress: Progress
) -> list[str]:
    """The pictures to copy; the ones already there are counted, a different one is a conflict."""
    new = []
    for path in paths:
        progress.advance(1)
        if not safe_relative(path):
            report.pictures_refused.append(path)
            continue
        if destination.has(path):
            if source.same_file(destination, path):
                report.pictures_skipped += 1
                continue
            digest = source.digest(path)
            if digest is None:
                report.pictures_missing.append(path)
            elif digest == destination.digest(path):
                report.pictures_skipped += 1
            else:
                raise StoreError(
                    f"conflict: the picture {path} is in both stores with different bytes: {NOTHING_WRITTEN}; "
                    "copy into an empty store, or move one of the pictures aside"
                )
        elif source.has(path):
            new.append(path)
        else:
            report.pictures_missing.append(path)
    return new


def _copy(
    src: pw.Database, dst: pw.Database, src_root: Path | None, dst_root: Path | None, progress: Progress
) -> CopyReport:
    report = CopyReport()
    with _snapshot(src), dst.atomic():
        plans = _plans(src, dst)
        paths = picture_paths(src)
        source_pictures, destination_pictures = Pictures(src, src_root), Pictures(dst, dst_root)
        progress.phase("checking", sum(plan.rows for plan in plans) + len(paths))
        new_rows = {plan.table.name: _check_rows(src, dst, plan, progress) for plan in plans}
        new_paths = _check_pictures(source_pictures, destination_pictures, paths, report, progress)
        progress.phase("copying", sum(new_rows.values()) + len(new_paths))
        for plan in plans:
            report.copied[plan.table.name] = _write_rows(src, dst, plan, progress)
            report.skipped[plan.table.name] = len(plan.skip)
            report.kept += plan.kept
            tables.move_identity(dst, plan.table)
        for path in new_paths:
            try:
                found = source_pictures.read(path)
                if found is None:  # gone since it was checked
                    report.pictures_missing.append(path)
                elif destination_pictures.write(path, *found):
                    report.pictures_copied += 1
                else:
                    report.pictures_skipped += 1
            except OSError as exc:
                raise StoreError(
                    f"cannot copy the picture {path}: {exc.strerror or exc}: the destination's rows were rolled "
                    "back (pictures already written stay: copying again skips them)"
                ) from None
            progress.advance(1)
    return report


def _write_rows(src: pw.Database, dst: pw.Database, plan: _Plan, progress: Progress) -> int:
    at = [plan.names.index(name) for name in plan.table.key]
    written = 0
    for page in tables.pages(src, plan.table, plan.names):
        rows = [tables.row_canon(row, plan.kinds) for row in page if tuple(row[i] for i in at) not in plan.skip]
        tables.insert(dst, plan.table.name, plan.names, rows)
        written += len(rows)
        progress.advance(len(rows))
    return written
