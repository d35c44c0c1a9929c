"""What a widget reads of the app it is in, typed in one place (a leaf: ui/images only inside PLAIN.image_class).

``AgentApp`` is a ``WidgetHost`` (mypy checks it: see the end of ui/app.py). A plain Textual app
(a test's, a screen run alone) is not: its widgets get ``PLAIN``'s answers (animated, nothing hidden,
no clock, no collector, no MCP). Widgets never look the app's attributes up by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from tui_agent.core.vault import Vault


class IdleHook(Protocol):
    """The idle collector (gc_tuning.IdleCollector): told about input, keys typed and released pages."""

    def input_seen(self) -> None: ...
    def typed(self) -> None: ...
    def released(self) -> None: ...


class McpStates(Protocol):
    """The app's MCP control, as the sidebar's server list sees it."""

    def states(self) -> dict[str, tuple[str, str]]: ...
    def start_in_background(self) -> None: ...


@runtime_checkable
class WidgetHost(Protocol):
    live_motion: bool  # False in tests and snapshots: no spinner, no blinking cursor
    thinking_hidden: bool  # every thinking block hidden (Ctrl+G)

    @property
    def conversation_id(self) -> int | None: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def idle_gc(self) -> IdleHook | None: ...
    @property
    def mcp(self) -> McpStates | None: ...
    @property
    def image_class(self) -> type:
        """The widget class that draws images on this terminal (ui/images.image_class)."""

    @property
    def vault(self) -> Vault | None:
        """The vault whose pictures the widgets show (core/media_files fetches a missing one)."""

    def when_painted(self, callback: Callable[[], object]) -> None: ...


class _Plain:
    """The answers for a widget in an app that is not a WidgetHost."""

    live_motion = True
    thinking_hidden = False
    conversation_id: int | None = None
    idle_gc: IdleHook | None = None
    mcp: McpStates | None = None
    vault: Vault | None = None

    @property
    def clock(self) -> Callable[[], float]:
        return lambda: 0.0

    @property
    def image_class(self) -> type:
        from tui_agent.ui.images import image_class  # the terminal's choice, as the app makes it

        return image_class(None)

    def when_painted(self, callback: Callable[[], object]) -> None:
        callback()


PLAIN: WidgetHost = _Plain()


# WidgetHost's members: Python 3.12+ lists them; on 3.11 they are what the class defines and annotates.
_MEMBERS: tuple[str, ...] = tuple(
    sorted(
        getattr(WidgetHost, "__protocol_attrs__", None)
        or {name for name in vars(WidgetHost) if not name.startswith("_")} | set(WidgetHost.__annotations__)
    )
)
_ABSENT = object()


def host_of(app: object) -> WidgetHost:
    """``app`` as a WidgetHost, or PLAIN when it is not one.

    Checked without reading any member: ``isinstance`` on a runtime-checkable Protocol calls
    ``hasattr`` on Python 3.11, which runs every property (the app's ``image_class`` imported
    textual-image and Pillow on the first paint, ~0.1 s, when the composer asked for ``live_motion``)."""
    if all(inspect.getattr_static(app, name, _ABSENT) is not _ABSENT for name in _MEMBERS):
        return app  # type: ignore[return-value]
    return PLAIN
