"""Shared fixtures: a loopback OpenAI-compatible server, a fresh vault, the fake flux2 on PATH."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))


def keep_compiled_code() -> None:
    """The run keeps Python's compiled code (``__pycache__``, ignored by git) even where
    ``PYTHONDONTWRITEBYTECODE`` is set (CI sets it): without it every test process rewrote the
    assertions of all 150 test modules again (6 of a worker's 12 s of CPU to collect), and every
    ``tui-agent``, memory_sql worker or MCP server a test starts compiled tui_agent's modules from
    their source. The programs' own children still choose for themselves (sql_worker writes none)."""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


keep_compiled_code()  # before the imports below: they are compiled too

import pg_cluster as pg_cluster_module  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

from tui_agent.core import profiles  # noqa: E402
from tui_agent.core.store import location  # noqa: E402
from tui_agent.core.store.db import open_store  # noqa: E402
from tui_agent.core.store.models import Profile  # noqa: E402
from tui_agent.core.vault import Vault, setup_logging  # noqa: E402

pytest_plugins = ["snapshot_setup", "serve_helpers", "store_thread_guard"]  # serve_helpers: the session-wide Chromium


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder per test process, as a user's ``~/.cache`` is one per machine: the terminal
    probe's "first start" marker is there already (a first start waits longer for a cold terminal)."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    (cache / "tui-agent").mkdir()
    (cache / "tui-agent" / "terminal-probed").touch()
    return cache


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shared_cache_home: Path) -> Iterator[None]:
    """No test sees the developer's keys, vault, config or PATH surprises; the fake flux2 is on PATH.

    Tests run in parallel (pytest-xdist), so nothing is shared between two tests that one of them
    could change: each test has its own user config and data folders, and its own tmux server
    (``TMUX_TMPDIR``: a plain ``tmux`` command in a test talks to a server only that test sees, which
    is killed when the test ends)."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TUI_AGENT_VAULT",
        "TUI_AGENT_TOKEN",
        "TUI_AGENT_DB",
        "TMUX",
        "TMUX_PANE",
        "PGPASSWORD",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "PATH", f"{TESTS / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    monkeypatch.setenv("FLUX2_LOG", str(tmp_path / "flux2.log"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache_home))
    # A socket path must stay under ~100 bytes: a short folder of its own, not tmp_path.
    tmux_dir = tempfile.mkdtemp(prefix="tmx")
    monkeypatch.setenv("TMUX_TMPDIR", tmux_dir)
    yield
    for socket in Path(tmux_dir).glob("tmux-*/*"):
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=20)
    shutil.rmtree(tmux_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def memory_sql_time_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """memory_sql's 3 s statement limit is the tool's guard against runaway queries, not a speed
    the tests may count on: at load 14 on 2 cores an ordinary UPDATE hit it (issue 38 item 2). Every
    test that runs the tool in its own process (the tool's tests, and the app's turns in run_test)
    runs under a limit far from any machine's speed; a test of the limit sets its own
    (``monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 1.0)``, after this fixture)."""
    from tui_agent.core.tools import memory_sql

    monkeypatch.setattr(memory_sql, "TIME_LIMIT_S", 600.0)


@pytest.fixture(autouse=True)
def models_forgotten() -> None:
    """What servers said of their models is not carried from one test to the next (a later test's
    server may get an earlier one's port)."""
    from tui_agent.core.models import catalog

    catalog.clear()


@pytest.fixture(autouse=True)
def notices_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every notification an app posts, kept in ``app.notices_seen`` (the messages, in order): the
    app's own list drops one when it times out, which a test on a loaded machine can outlive.
    (Only where Textual is loaded already: a test module that runs an app imports it.)"""
    if "textual.app" not in sys.modules:
        return
    from textual.app import App

    notify = App.notify

    def recording(self: App, message: str, *args: object, **kwargs: object) -> None:
        self.__dict__.setdefault("notices_seen", []).append(str(message))
        notify(self, message, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(App, "notify", recording)


@dataclass
class VaultEnv:
    vault: Vault
    profile: Profile
    fake: FakeOpenAI

    def reload_profile(self) -> Profile:
        self.profile = Profile.get_by_id(self.profile.id)
        return self.profile


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[pg_cluster_module.Cluster]:
    """One throwaway PostgreSQL cluster per test process (see tests/pg_cluster.py)."""
    try:
        cluster = pg_cluster_module.start_cluster()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    yield cluster
    cluster.remove()


@pytest.fixture(scope="session")
def pg_store_template(pg_cluster: pg_cluster_module.Cluster) -> str:
    """A database holding tui-agent's schema at its latest version and nothing else, made once per
    test process; nobody connects to it (only copies of it are used: ``pg_store_url``)."""
    import psycopg

    from tui_agent.core.store import pg_migrations

    name = pg_cluster.create_database()
    with psycopg.connect(pg_cluster.url(name), autocommit=True) as conn:
        pg_migrations.migrate(conn)
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
    return name


def database_for_test(
    cluster: pg_cluster_module.Cluster, monkeypatch: pytest.MonkeyPatch, template: str | None = None
) -> Iterator[str]:
    """A new database for one test (a copy of ``template``, else empty), named by ``$TUI_AGENT_DB``
    so that every command and child process the test starts uses it; dropped at the test's end."""
    from tui_agent.core.store.models import MODELS

    before = MODELS[0]._meta.database
    name = cluster.create_database(template)
    url = cluster.url(name)
    monkeypatch.setenv("TUI_AGENT_DB", url)
    yield url
    database = MODELS[0]._meta.database
    if database is not None and getattr(database, "store_url", None) is not None:
        database.close()
        # The models go back to what they were bound to: a later test on this worker that opens no
        # store must not find them bound to a database that is about to be dropped (the picture
        # store would then write there).
        for model in MODELS:
            model._meta.set_database(before)
    cluster.drop_database(name)


@pytest.fixture
def pg_url(pg_cluster: pg_cluster_module.Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new, empty PostgreSQL database for this test; ``$TUI_AGENT_DB`` names it, so that every
    command and child process the test starts uses it."""
    yield from database_for_test(pg_cluster, monkeypatch)


@pytest.fixture
def pg_store_url(
    pg_cluster: pg_cluster_module.Cluster, pg_store_template: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A new PostgreSQL database for this test with tui-agent's schema in place (a copy of
    ``pg_store_template``: what opening a store makes of ``pg_url``'s empty database, without
    migrating each test's database again, which was half of a PostgreSQL test's set-up)."""
    yield from database_for_test(pg_cluster, monkeypatch, pg_store_template)


@pytest.fixture
def own_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pg_cluster_module.Cluster]:
    """A cluster of this test's own: it is stopped and started mid-test (the worker's shared one
    serves other tests meanwhile); ``$TUI_AGENT_DB`` names a database in it."""
    try:
        cluster = pg_cluster_module.start_cluster()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    try:
        url = cluster.url(cluster.create_database())
        monkeypatch.setenv("TUI_AGENT_DB", url)
        yield cluster
    finally:
        cluster.remove()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``both_backends`` (tests/backends.py): once on SQLite, once on PostgreSQL."""
    if metafunc.definition.get_closest_marker("sqlite_only"):
        return  # its reason says why: a fresh store per vault, SQLite's own files or internals
    if metafunc.definition.get_closest_marker("both_backends") and "store_backend" in metafunc.fixturenames:
        metafunc.parametrize("store_backend", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    # TUI_AGENT_TEST_STORE=postgresql runs every other test on PostgreSQL too (a whole-suite check).
    backend = getattr(request, "param", os.environ.get("TUI_AGENT_TEST_STORE", "sqlite"))
    if backend == "postgresql":
        # A test whose store ``env`` opens at once gets it migrated already (the same schema);
        # one that asks for ``pg_url`` itself, or has no ``env``, starts from an empty database.
        migrated = "env" in request.fixturenames and "pg_url" not in request.fixturenames
        request.getfixturevalue("pg_store_url" if migrated else "pg_url")
    return str(backend)


@pytest.fixture
def env(tmp_path: Path, fake_llm: FakeOpenAI, store_backend: str) -> Iterator[VaultEnv]:
    vault = Vault(tmp_path / "vault").init()
    setup_logging(vault)
    db = open_store(location.resolve(vault.root))
    from helpers import loopback_profile

    profile = loopback_profile("test", fake_llm.base_url)
    profiles.use_profile("test")
    yield VaultEnv(vault, profile, fake_llm)
    db.close()


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport | None:
    """In CI (``CI=true``) every system tool is installed by ``.ci/run``: a test that skips for a
    missing tool (its reason says ``apt-get install``) fails there instead of passing silently."""
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        return None
    report = pytest.TestReport.from_item_and_call(item, call)
    if report.skipped and isinstance(report.longrepr, tuple) and "apt-get install" in str(report.longrepr[2]):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where .ci/run installs every system tool: {report.longrepr[2]}"
    return report


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core (at least 4). Most of a test's time is spent waiting for
    another process (the app in a terminal, a browser, an MCP server, a loopback server), so one
    worker a core leaves the cores idle; more than two a core only adds contention."""
    return max(4, 2 * (os.cpu_count() or 1))


REPOSITORY = TESTS.parent


def tree_state() -> dict[str, str] | None:
    """Each path ``git status`` lists (new, changed or deleted; ignored ones such as .venv, the
    caches and snapshot_report.html are not listed) with a hash of its content, so that a file that
    was changed before the run and is changed again by it counts too. None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            cwd=REPOSITORY,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    state: dict[str, str] = {}
    entries = iter(done.stdout.decode("utf-8", "surrogateescape").split("\0"))
    for entry in entries:
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            next(entries, None)  # a rename's second field is its old path
        where = REPOSITORY / path
        digest = hashlib.sha256(where.read_bytes()).hexdigest() if where.is_file() else "-"
        state[path] = f"{code} {digest}"
    return state


def pytest_sessionstart(session: pytest.Session) -> None:
    """The tree as it was before the run (in the process that runs the session: with pytest-xdist
    that is the controller, which compares again after every worker has finished)."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[TREE_BEFORE] = tree_state()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails if the tests left a file in the repository, or changed one: a test writes only
    under its tmp_path (a file in the checkout ends up committed by the next `git add -A`)."""
    if hasattr(session.config, "workerinput"):
        return
    before = session.config.stash.get(TREE_BEFORE, None)
    after = tree_state() if before is not None else None
    if before is None or after is None:
        return
    left = sorted(path for path, state in after.items() if before.get(path) != state)
    left += sorted(f"{path} (deleted)" for path in before if path not in after)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "the tests left these in the repository (a test writes only under its tmp_path): " + ", ".join(left)
    if reporter is not None:
        reporter.write("\n")
        reporter.write_sep("=", "tree not clean", red=True)
        reporter.write_line(message)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


TREE_BEFORE = pytest.StashKey[dict[str, str] | None]()


@pytest.fixture
def pids(tmp_path, monkeypatch):
    """The file the fixture MCP server writes its process id to (one line per start): the MCP
    tests' (here, not in a tests/mcp/conftest.py: a second module named conftest shadows this one
    for `from conftest import ...`)."""
    path = tmp_path / "mcp-pids.txt"
    monkeypatch.setenv("FIXTURE_MCP_PIDS", str(path))
    return path
