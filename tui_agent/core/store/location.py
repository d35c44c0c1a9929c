"""Where the history lives: a store URL, chosen by ``--db`` / ``$TUI_AGENT_DB`` / ``tui-agent db use``.

- ``sqlite:///absolute/path.db`` or ``sqlite:relative.db``: one file (the default is the vault's
  ``agent.db``, as it always was).
- ``postgresql://user@host:port/dbname``: one PostgreSQL database that several machines (each with
  its own vault folder, which keeps the logs and a cache of the pictures) share.

A password is never written down by tui-agent: libpq finds it in ``$PGPASSWORD`` or ``~/.pgpass``,
or the URL names a variable in its place (``postgresql://ann:${TEAM_DB_PASSWORD}@db/agent``) that is
read when connecting. A URL with a password in clear is taken from ``--db`` or the environment
(it is not kept) but refused by ``db use``, which keeps the URL in the vault's local settings.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tui_agent.core.store.errors import StoreError

DB_ENV = "TUI_AGENT_DB"
LOCAL_SETTINGS = "local-settings.json"  # in the vault: this machine's choices, never synced
_VARIABLE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
SCHEMES = ("sqlite", "postgresql", "postgres")
# libpq parameters that carry a credential, or name a file of them: never kept, never shown
# (``password`` itself is the URL's password, however it is written).
CREDENTIAL_OPTIONS = ("passfile", "sslpassword")


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. ``text`` is what the user wrote, minus a password in clear."""

    kind: str  # "sqlite" or "postgresql"
    text: str
    path: Path | None = None  # sqlite
    user: str = ""
    host: str = ""
    port: int | None = None
    dbname: str = ""
    password_variable: str = ""  # the ${NAME} in the password's place
    password: str = ""  # given in clear (--db / the environment only; never kept)
    options: tuple[tuple[str, str], ...] = ()
    credentials: tuple[tuple[str, str], ...] = ()  # passfile=, sslpassword= (never kept, never shown)

    @property
    def is_postgresql(self) -> bool:
        return self.kind == "postgresql"

    def where(self) -> str:
        """How messages name the store: the file, or user@host:port/dbname (never a password)."""
        if self.path is not None:
            return str(self.path)
        host = self.host or "localhost"
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{host}{port}/{self.dbname}"

    def listener_args(self) -> dict[str, Any]:
        """``connect_args`` for the listener's connection: ``listen_host`` and ``listen_port`` in
        the URL's query send it straight to the server when the store's host and port are a pooler
        (PgBouncer in transaction mode does not carry LISTEN): ``postgresql://me@pgbouncer:6432/
        tui_agent?listen_host=db.lan&listen_port=5432``."""
        args = self.connect_args()
        chosen = dict(self.options)
        if chosen.get("listen_host"):
            args["host"] = chosen["listen_host"]
        if chosen.get("listen_port"):
            args["port"] = chosen["listen_port"]
        return args

    def connect_args(self) -> dict[str, Any]:
        """Keyword arguments for psycopg / peewee's PostgresqlDatabase (libpq fills in the rest:
        PGPASSWORD, ~/.pgpass, PGSSLMODE...)."""
        args: dict[str, Any] = {name: value for name, value in self.options if name not in LISTENER_OPTIONS}
        args.update(self.credentials)
        if self.user:
            args["user"] = self.user
        if self.host:
            args["host"] = self.host
        if self.port:
            args["port"] = self.port
        password = self.password
        if self.password_variable:
            password = os.environ.get(self.password_variable, "")
            if not password:
                raise StoreError(
                    f"the store URL takes its password from ${self.password_variable}, which is not set: "
                    f"export {self.password_variable}=... and run again"
                )
        if password:
            args["password"] = password
        return args


def parse(text: str, *, base: Path | None = None) -> StoreURL:
    """Parse a store URL; raises StoreError (one line, with an example) for anything else."""
    raw = text.strip()
    scheme = raw.split(":", 1)[0].lower() if ":" in raw else ""
    if scheme not in SCHEMES:
        raise StoreError(
            f"not a store URL: {_shown(raw)!r}: use sqlite:///path/to/agent.db or postgresql://user@host:5432/dbname"
        )
    if scheme == "sqlite":
        rest = raw[len("sqlite:") :]
        if rest.startswith("//"):
            rest = rest[2:]  # sqlite:///abs -> /abs ; sqlite://rel -> rel
        if rest.startswith("/"):
            rest = "/" + rest.lstrip("/")  # sqlite:////abs (SQLAlchemy's spelling) is the same file
        if not rest:
            raise StoreError("the sqlite URL names no file: use sqlite:///path/to/agent.db")
        path = Path(unquote(rest)).expanduser()
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        return StoreURL("sqlite", f"sqlite://{path}", path=path)
    parts = urlsplit(raw)
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or "/" in dbname:
        raise StoreError(
            f"the PostgreSQL URL {_shown(_without_password(raw))!r} names no database: "
            "use postgresql://user@host:5432/dbname"
        )
    try:
        port = parts.port
    except ValueError:
        raise StoreError(f"the PostgreSQL URL {_shown(_without_password(raw))!r} has a bad port") from None
    password = unquote(parts.password or "")
    variable = ""
    match = _VARIABLE.match(password)
    if match:
        variable, password = match.group(1), ""
    options: list[tuple[str, str]] = []
    credentials: list[tuple[str, str]] = []
    kept: list[str] = []  # the query as written, minus what carries a credential
    for pair in filter(None, parts.query.split("&")):
        key, _, value = pair.partition("=")
        name, value = unquote(key), unquote(value)
        if name.strip().lower() == "password":
            match = _VARIABLE.match(value)
            if match and not password:
                variable = variable or match.group(1)
                kept.append(pair)  # a variable's name is no secret: kept, read when connecting
            elif not variable:
                password = password or value
            continue
        if name.strip().lower() in CREDENTIAL_OPTIONS:
            credentials.append((name.strip().lower(), value))
            continue
        options.append((name, value))
        kept.append(pair)
    text = _without_password(raw, keep_variable=bool(variable))
    if len(kept) != len(list(filter(None, parts.query.split("&")))):
        text = text.split("?", 1)[0] + ("?" + "&".join(kept) if kept else "")
    return StoreURL(
        "postgresql",
        text,
        user=unquote(parts.username or ""),
        host=unquote(parts.hostname or ""),
        port=port,
        dbname=dbname,
        password_variable=variable,
        password=password,
        options=tuple(options),
        credentials=tuple(credentials),
    )


LISTENER_OPTIONS = ("listen_host", "listen_port")  # tui-agent's own (StoreURL.listener_args), not libpq's


def _without_password(raw: str, keep_variable: bool = False) -> str:
    parts = urlsplit(raw)
    if parts.password is None or keep_variable:
        return raw
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return raw.replace(parts.netloc, f"{user}@{netloc[-1]}" if len(netloc) == 2 else parts.netloc, 1)


def _shown(text: str) -> str:
    return text if len(text) <= 200 else text[:100] + "…" + text[-60:]


def default_url(vault_root: Path) -> StoreURL:
    path = vault_root / "agent.db"
    return StoreURL("sqlite", f"sqlite://{path}", path=path)


def local_settings(vault_root: Path) -> dict[str, object]:
    try:
        data = json.loads((vault_root / LOCAL_SETTINGS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read {vault_root / LOCAL_SETTINGS}: {exc}: fix or remove it") from None
    return data if isinstance(data, dict) else {}


def remembered(vault_root: Path) -> str | None:
    value = local_settings(vault_root).get("db")
    return value if isinstance(value, str) and value else None


def remember(vault_root: Path, url: StoreURL | None) -> None:
    """Keep (or with None, forget) the store URL in the vault's local settings. Refuses a URL with
    a password in clear: it would be written to disk."""
    if url is not None and url.credentials:
        names = ", ".join(sorted({name for name, _ in url.credentials}))
        raise StoreError(
            f"the URL carries a credential ({names}), which would be written to disk: leave it out and let libpq "
            "find it ($PGPASSFILE, ~/.pgpass; $PGSSLPASSWORD is not kept either)"
        )
    if url is not None and url.password:
        raise StoreError(
            "the URL holds a password in clear, which would be written to disk: leave it out and put it in "
            "$PGPASSWORD or ~/.pgpass, or write ${VARIABLE} in its place (the variable is read when connecting)"
        )
    settings = local_settings(vault_root)
    if url is None:
        settings.pop("db", None)
    else:
        settings["db"] = url.text
    target = vault_root / LOCAL_SETTINGS
    temporary = target.with_name(f".{LOCAL_SETTINGS}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(settings, indent=2) + "\n")
    os.replace(temporary, target)


def resolve(vault_root: Path, *, trusted: bool = True) -> StoreURL:
    """The store this process uses: ``$TUI_AGENT_DB`` (``--db`` sets it, so that child processes
    use the same store) > the vault's remembered URL > the vault's agent.db.

    ``trusted`` False: the vault came with the current folder and is not trusted (core.trust), so
    its local settings are not read at all: a cloned folder's ``local-settings.json`` naming
    ``postgresql://you:${ANY_VARIABLE}@elsewhere/x`` must not make us connect there with a secret."""
    chosen = os.environ.get(DB_ENV)
    if not chosen and (vault_root / LOCAL_SETTINGS).exists() and not trusted:
        raise StoreError(
            f"the vault {_shown(str(vault_root))} came with the current folder and is not trusted, so the store its "
            f"{LOCAL_SETTINGS} names is not used: trust it with `tui-agent vault trust {vault_root}`, or name it "
            "with --vault"
        )
    chosen = chosen or remembered(vault_root)
    return parse(chosen, base=vault_root) if chosen else default_url(vault_root)
