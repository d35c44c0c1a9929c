"""Import ``openai`` without the thousand type modules a chat request never touches.

``import openai`` costs ~0.8 s here, three quarters of it in ``openai.types``: its package
``__init__`` (and those of its sub-packages) re-export every model of the whole API (responses,
evals, graders, realtime...), each a pydantic class built at import. A chat completion needs a few
dozen of them. ``openai.lib``'s ``__init__`` is the same kind of file: it loads the helpers for
parsing replies into user models (~25 ms), which a raw stream never uses.

Those ``__init__`` files are generated code made only of ``from .module import Name as Name``
lines. :func:`load` installs an import hook that runs such a package ``__init__`` lazily: the
package gets its real ``__path__`` (so submodules import as usual) and a module ``__getattr__``
(PEP 562) that imports ``.module`` the first time ``Name`` is asked for. An ``__init__`` with any
other statement runs as it is. Every name stays reachable (``__all__`` lists them all, so a star
import loads everything), so nothing changes but when the work happens.

openai's optional aiohttp transport (``openai._vendor.httpx_aiohttp``, ~0.15 s for aiohttp) is
left out the way openai itself handles aiohttp not being installed: we never use that transport.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

LAZY_PACKAGES = ("openai.types", "openai.lib")
SKIPPED = "openai._vendor.httpx_aiohttp"  # optional in openai: it falls back when the import fails

_lock = threading.Lock()
_installed = False


def reexports(source: bytes, filename: str) -> dict[str, tuple[str, str | None]] | None:
    """``{name: (submodule, attribute or None for the module itself)}`` when the source is only
    docstrings, ``from __future__`` and relative re-exports; ``None`` otherwise."""
    names: dict[str, tuple[str, str | None]] = {}
    for node in ast.parse(source, filename).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if not (isinstance(node, ast.ImportFrom) and node.level == 1):
            return None
        for alias in node.names:
            if alias.name == "*":
                return None
            bound = alias.asname or alias.name
            names[bound] = (alias.name, None) if node.module is None else (node.module, alias.name)
    return names


class _LazyInitLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        origin = str(module.__spec__.origin if module.__spec__ else "")
        try:
            names = reexports(Path(origin).read_bytes(), origin)
        except (OSError, SyntaxError, ValueError):
            names = None
        if names is None:
            self.real.exec_module(module)
            return
        _make_lazy(module, names)


def _make_lazy(module: ModuleType, names: dict[str, tuple[str, str | None]]) -> None:
    package = module.__name__
    namespace = module.__dict__

    def __getattr__(name: str) -> Any:
        try:
            submodule, attribute = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        loaded = importlib.import_module(f"{package}.{submodule}")
        value = loaded if attribute is None else getattr(loaded, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    namespace["__getattr__"] = __getattr__
    namespace["__dir__"] = __dir__
    namespace["__all__"] = list(names)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname == SKIPPED and "aiohttp" not in sys.modules:
            raise ImportError(f"{SKIPPED} is not used by tui-agent", name=fullname)
        if not any(fullname == p or fullname.startswith(p + ".") for p in LAZY_PACKAGES):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return spec
        if not str(spec.origin).endswith("__init__.py"):
            return spec
        spec.loader = _LazyInitLoader(spec.loader)
        return spec


def install() -> None:
    """Add the hook (once). It changes nothing for a package already imported."""
    global _installed
    with _lock:
        if _installed or "openai" in sys.modules:
            _installed = True
            return
        sys.meta_path.insert(0, _Finder())
        _installed = True


def load() -> ModuleType:
    """``import openai`` through the hook."""
    install()
    import openai

    return openai
