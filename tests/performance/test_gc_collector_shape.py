"""gc_tuning acts only on the collector it was measured on (CPython 3.11-3.13, generational) and is
a no-op on any other: 3.14's incremental collector and other interpreters are simulated here."""

from __future__ import annotations

import gc
import sys
import types

import pytest

from tui_agent.ui import gc_tuning


@pytest.fixture
def collector(monkeypatch):
    """The collector on, no pauses; gc.freeze recorded instead of run."""
    assert not gc_tuning._pauses
    was = gc.isenabled()
    gc.enable()
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    yield frozen
    for owner in list(gc_tuning._pauses):
        gc_tuning.resume(owner)
    if was:
        gc.enable()
    else:
        gc.disable()


class _App:
    turns: list[object] = []


def _acts(frozen: list[bool]) -> dict[str, bool]:
    gc_tuning.pause(gc_tuning.STARTUP)
    paused = not gc.isenabled()
    gc_tuning.resume(gc_tuning.STARTUP)
    gc_tuning.freeze_long_lived()
    before = gc.get_threshold()
    gc_tuning.hold_full("shape")
    held = gc.get_threshold() != before
    gc_tuning.release_full("shape")
    assert gc.get_threshold() == before
    return {
        "pause": paused,
        "freeze": bool(frozen),
        "idle": gc_tuning.IdleCollector(_App()).enabled,
        "hold": held,
    }


def test_the_measured_collector_is_tuned(collector, monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 12, 4, "final", 0))
    assert gc_tuning.measured_collector()
    assert _acts(collector) == {"pause": True, "freeze": True, "idle": True, "hold": True}
    assert gc.isenabled()


def test_this_interpreter_is_one_it_was_measured_on():
    assert sys.implementation.name == "cpython" and sys.version_info[:2] <= (3, 13)
    assert gc_tuning.measured_collector()


@pytest.mark.parametrize(
    "shape",
    [
        "3.14 incremental",
        "3.10",
        "pypy",
        "two generations",
    ],
)
def test_any_other_collector_is_left_alone(collector, monkeypatch, shape):
    if shape == "3.14 incremental":
        monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    elif shape == "3.10":
        monkeypatch.setattr(sys, "version_info", (3, 10, 12, "final", 0))
    elif shape == "pypy":
        monkeypatch.setattr(sys, "implementation", types.SimpleNamespace(name="pypy", version=sys.version_info))
    else:
        monkeypatch.setattr(gc, "get_threshold", lambda: (2000, 10))
    assert not gc_tuning.measured_collector()
    assert _acts(collector) == {"pause": False, "freeze": False, "idle": False, "hold": False}
    assert gc.isenabled() and not gc_tuning._pauses
