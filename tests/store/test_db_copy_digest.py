"""`db copy` checks each picture stored by content hash against its sha256 (issue 34 item 6): bytes
changed in the source database are reported, never copied as the picture."""

from __future__ import annotations

import hashlib
import io
import subprocess
from pathlib import Path

import psycopg
import pytest
from cli_fork import tui_agent_argv

from tui_agent.core.store import location
from tui_agent.core.store.db import open_store


@pytest.fixture
def pg(pg_cluster):
    name = pg_cluster.create_database()
    yield pg_cluster.url(name)
    pg_cluster.drop_database(name)


def png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30)).save(out, "PNG")
    return out.getvalue()


def copy(source: str, destination: str, vault: Path) -> subprocess.CompletedProcess[str]:
    argv = [*tui_agent_argv(), "--vault", str(vault), "db", "copy", source, destination]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_blob_that_does_not_match_its_sha256_is_reported(pg, tmp_path):
    open_store(location.parse(pg)).close()  # the schema
    data = png_bytes()
    digest = hashlib.sha256(data).hexdigest()
    with psycopg.connect(pg) as conn:
        conn.execute(
            "INSERT INTO media_blobs (sha256, size, mime, data, created_at) VALUES (%s, %s, 'image/png', %s, 'now')",
            (digest, len(data), data),
        )
        conn.execute("INSERT INTO media_paths (path, sha256, created_at) VALUES ('media/a.png', %s, 'now')", (digest,))
    vault = tmp_path / "vault"
    good = copy(pg, f"sqlite:///{tmp_path / 'good.db'}", vault)
    assert good.returncode == 0, good.stderr
    assert (vault / "media" / "a.png").read_bytes() == data

    with psycopg.connect(pg) as conn:  # someone changes the bytes, not the hash
        conn.execute("UPDATE media_blobs SET data = %s", (data[:-8] + b"tampered",))
    other = tmp_path / "other"
    bad = copy(pg, f"sqlite:///{tmp_path / 'bad.db'}", other)
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: cannot copy the picture media/a.png: its bytes in the source do not match")
    assert bad.stderr.count("\n") == 1
    assert not (other / "media" / "a.png").exists()
