"""The trust list and the approvals are believed only when no one else could have written them
(issue 34 item 5): world- or group-writable, another user's, a symlink, or in a folder others can
write, they are refused with one line naming the problem, as ssh refuses a loose authorized_keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_agent.core import approvals, trust

NOBODY = 65534


def config() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "tui-agent"


def loosen(path: Path, how: str) -> str:
    """Make ``path`` (a file in the config folder) writable by someone else; the words expected."""
    if how == "world-writable":
        path.chmod(0o666)
        return f"refused: {path} is writable by others (mode 666)"
    if how == "group-writable":
        path.chmod(0o620)
        return f"refused: {path} is writable by others (mode 620)"
    if how == "another user's":
        os.chown(path, NOBODY, NOBODY)
        return f"refused: {path} is owned by another user (uid {NOBODY})"
    if how == "a symlink":
        target = path.parent.parent / "elsewhere.json"
        target.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(target)
        return f"refused: {path} is a symbolic link"
    assert how == "in a 0777 folder"
    path.parent.chmod(0o777)
    return f"refused: the folder {path.parent} is writable by others (mode 777)"


HOW = ["world-writable", "group-writable", "another user's", "a symlink", "in a 0777 folder"]


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "jj_vault").mkdir(parents=True)
    yield repo
    config().chmod(0o700)


@pytest.mark.parametrize("how", HOW)
def test_a_loose_trust_list_is_refused_in_one_line(repo, how):
    vault = (repo / "jj_vault").resolve()
    trust.trust(vault)
    assert trust.is_trusted(vault)
    expected = loosen(trust.trust_file(), how)
    with pytest.raises(trust.TrustStoreError) as caught:
        trust.trusted_paths()
    assert str(caught.value).startswith(expected)
    assert not trust.is_trusted(vault)
    result = subprocess.run(
        [sys.executable, "-m", "tui_agent", "ask", "hi"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"error: {expected}") and result.stderr.count("\n") == 1
    with pytest.raises(trust.TrustStoreError):  # nor is it written through
        trust.trust(repo)


@pytest.mark.parametrize("how", HOW)
def test_loose_approvals_approve_nothing(repo, how, env):
    item = approvals.endpoint("http://127.0.0.1:9/v1", "", "test")
    approvals.approve([item])
    assert approvals.approved(item)
    expected = loosen(approvals.approvals_file(), how)
    assert not approvals.approved(item)
    with pytest.raises(approvals.ApprovalsError) as caught:
        approvals.pending([item])
    assert str(caught.value).startswith(expected)
    with pytest.raises(approvals.ApprovalsError):
        approvals.approve([approvals.endpoint("http://127.0.0.1:8/v1", "", "test")])


def test_a_private_list_still_works(repo):
    trust.trust(repo / "jj_vault")
    assert json.loads(trust.trust_file().read_text())["trusted"] == [str((repo / "jj_vault").resolve())]
    assert trust.is_trusted(repo / "jj_vault")
