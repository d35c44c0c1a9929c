"""Every test fails if the app makes a store call on the event loop's thread (issue 35).

A store call is a statement peewee sends (``Database.execute_sql``: every query, insert, update,
and the migrations' and the search's statements through peewee) or a transaction it opens. It is the
app's when the asyncio task running it was started by Textual (a message pump, a worker that is not
a thread, the app itself): a test's own body may read the store to set up or check (its task is the
test's coroutine, or the call comes from a test module's function the pilot runs). The call is let through (the app behaves as it would) and the test fails at its
end, naming where the call came from.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tui_agent.core.store.driver import import_peewee

pw = import_peewee()

TEXTUAL = ("/textual/",)


def app_task_on_this_thread() -> bool:
    """Whether the caller runs in an asyncio task that Textual started, on the loop's own thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop running in this thread: a worker thread, or plain code
        return False
    if task is None:
        return False
    code = getattr(task.get_coro(), "cr_code", None)
    filename = code.co_filename if code is not None else ""
    return any(part in filename.replace("\\", "/") for part in TEXTUAL)


PROJECT = (Path(__file__).resolve().parents[1] / "tui_agent", Path(__file__).resolve().parent)


def _ours(filename: str) -> bool:
    """A frame of the project (the app under tui_agent/ or a test under tests/), not of a library,
    Python, a program's script (``.venv/bin/pytest``, the first frame of a run with ``-n 0``), a
    pilot's generated code or this guard."""
    path = Path(filename)
    if filename.startswith("<") or not path.is_absolute() or path.name == "store_thread_guard.py":
        return False
    return any(path.is_relative_to(root) for root in PROJECT) and "/site-packages/" not in filename


def _this_tasks_frames(stack: traceback.StackSummary) -> list[traceback.FrameSummary]:
    """The frames of the running task's step: those after the event loop's last ``Handle._run``. A
    test that runs the app in its own thread (``snap_compare``) has its own frames below the loop's:
    they do not make the app's calls a test's."""
    runs = [i for i, f in enumerate(stack) if f.name == "_run" and f.filename.endswith("asyncio/events.py")]
    return list(stack)[runs[-1] + 1 :] if runs else list(stack)


class Guard:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def check(self, what: str) -> None:
        if app_task_on_this_thread():
            frames = [f for f in _this_tasks_frames(traceback.extract_stack()[:-2]) if _ours(f.filename)]
            if frames and Path(frames[0].filename).name.startswith("test_"):
                return  # a test's own code run by the app's pilot (snap_compare's run_before): not the app's
            stack = "".join(traceback.format_list(frames[-8:]))
            chain = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames[-8:]))
            with self.lock:
                self.calls.append(f"{what} on the event loop's thread, from:\n{stack}\n{chain}")


GUARD = Guard()


def _wrap(name: str) -> Any:
    original = getattr(pw.Database, name)

    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        GUARD.check(f"{type(self).__name__}.{name}")
        return original(self, *args, **kwargs)

    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    return guarded


@pytest.fixture(autouse=True)
def store_off_the_ui_thread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fails the test when the app called the store from the event loop's thread (see the module)."""
    if request.node.get_closest_marker("store_on_ui_thread_allowed"):
        yield
        return
    for name in ("execute_sql", "begin"):
        monkeypatch.setattr(pw.Database, name, _wrap(name))
    GUARD.calls.clear()
    yield
    calls, GUARD.calls[:] = list(GUARD.calls), []
    if calls:
        sites = sorted({call.splitlines()[-1] for call in calls})
        pytest.fail(
            f"{len(calls)} store call(s) made by the app on the event loop's thread (issue 35); the first:\n"
            f"{calls[0]}\nfrom these places:\n" + "\n".join(sites),
            pytrace=False,
        )
