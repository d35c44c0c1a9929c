"""A throwaway PostgreSQL cluster for the tests: ``initdb`` and ``pg_ctl`` in a temporary folder,
listening on a free loopback port, stopped and removed at the end.

Debian's ``postgresql`` package provides the programs (``/usr/lib/postgresql/N/bin``); no service
needs to run. ``initdb`` refuses to run as root, so as root the cluster runs as the ``postgres``
user in a folder that user owns. One cluster per test process (pytest-xdist worker); each test
gets its own database (``tests/conftest.py``'s ``pg_url``).

``initdb`` runs once per PostgreSQL version: its data folder is kept as a template in
``~/.cache/tui-agent-tests/pg-<key>/`` and each cluster starts from a copy (initdb takes seconds of
CPU, a copy a fraction of one; a cluster per worker and the tests that stop their own made seven a
run).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

INSTALL = "PostgreSQL is not installed (initdb/pg_ctl not found): apt-get install postgresql"
INITDB_OPTIONS = ("-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
# Read at import, before a test's clean_env points XDG_CACHE_HOME at a folder of its own.
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tui-agent-tests"


def bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl: Debian's newest version, else the PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    root: Path
    port: int
    bin: Path
    as_user: list[str]

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, dbname: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def create_database(self, template: str | None = None) -> str:
        """A new database: empty (a copy of template1), or a copy of ``template``."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return name

    def give_to_new_user(self, name: str) -> str:
        """A new login role (not a superuser, no CREATEROLE) made the owner of database ``name``."""
        import psycopg

        user = f"ann_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE ROLE "{user}" LOGIN')
            admin.execute(f'ALTER DATABASE "{name}" OWNER TO "{user}"')
        return user

    def drop_database(self, name: str) -> None:
        """``WITH (FORCE)`` ends the database's sessions, then waits 5 s for them to go. A backend
        busy in one long step of a hostile statement (memory_sql's tests: a string doubled until
        its limits) acts on that only at its next check, later than 5 s on a loaded machine: the
        drop is asked again, for 2 min at most."""
        import psycopg

        for attempt in range(24):
            try:
                with psycopg.connect(self.admin_url, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except psycopg.errors.ObjectInUse:
                if attempt == 23:
                    raise

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", mode, "stop"],
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.root / "data"),
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "-w",
            "start",
        )

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _as_user() -> list[str]:
    # initdb refuses root: as root the cluster belongs to the postgres user (made by the package).
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _owned_temp(prefix: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    return root


def template(programs: Path) -> Path:
    """The data folder of a fresh ``initdb`` for this version and these options, made once (under a
    lock: the workers start together) and kept in the cache."""
    version = subprocess.run([str(programs / "initdb"), "--version"], capture_output=True, text=True, timeout=60)
    key = hashlib.sha256(f"{version.stdout} {INITDB_OPTIONS} {os.geteuid()}".encode()).hexdigest()[:16]
    kept = CACHE / f"pg-{key}"
    if (kept / "ready").exists():
        return kept / "data"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"pg-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (kept / "ready").exists():
            return kept / "data"
        made = _owned_temp("tui-agent-pg-template-")
        try:
            done = subprocess.run(
                [*_as_user(), str(programs / "initdb"), "-D", str(made / "data"), *INITDB_OPTIONS],
                capture_output=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise RuntimeError(f"could not make a PostgreSQL cluster: {done.stderr.decode(errors='replace')}")
            shutil.rmtree(kept, ignore_errors=True)
            kept.mkdir()
            subprocess.run(["cp", "-a", str(made / "data"), str(kept / "data")], check=True, timeout=300)
            (kept / "ready").touch()
        finally:
            shutil.rmtree(made, ignore_errors=True)
    return kept / "data"


def start_cluster() -> Cluster:
    """A copy of the template data folder + pg_ctl start; raises RuntimeError with PostgreSQL's own
    words if it cannot."""
    programs = bin_dir()
    if programs is None:
        raise FileNotFoundError(INSTALL)
    data = template(programs)
    root = _owned_temp("tui-agent-pg-")
    cluster = Cluster(root, free_port(), programs, _as_user())
    try:
        # cp -a keeps the postgres user's ownership (as root) and the folder's 0700 mode.
        subprocess.run(["cp", "-a", str(data), str(root / "data")], check=True, capture_output=True, timeout=300)
        cluster.start()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start a PostgreSQL cluster: {exc.stderr.decode(errors='replace')}") from None
    return cluster
