"""A throwaway PostgreSQL cluster for the tests: ``initdb`` and ``pg_ctl`` in a temporary folder,
listening on a free loopback port, stopped and removed at the end.

Debian's ``postgresql`` package provides the programs (``/usr/lib/postgresql/N/bin``); no service
needs to run. ``initdb`` refuses to run as root, so as root the cluster runs as the ``postgres``
user in a folder that user owns. One cluster per test process (pytest-xdist worker); each test
gets its own database (``tests/conftest.py``'s ``pg_url``).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

INSTALL = "PostgreSQL is not installed (initdb/pg_ctl not found): apt-get install postgresql"


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

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

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


def start_cluster() -> Cluster:
    """initdb + pg_ctl start; raises RuntimeError with PostgreSQL's own words if it cannot."""
    programs = bin_dir()
    if programs is None:
        raise FileNotFoundError(INSTALL)
    root = Path(tempfile.mkdtemp(prefix="tui-agent-pg-", dir="/tmp"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        # initdb refuses root: the cluster belongs to the postgres user (made by the package).
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    cluster = Cluster(root, free_port(), programs, as_user)
    try:
        cluster._run(
            str(programs / "initdb"),
            "-D",
            str(root / "data"),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        cluster.start()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start a PostgreSQL cluster: {exc.stderr.decode(errors='replace')}") from None
    return cluster
