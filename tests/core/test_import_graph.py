"""No import circle in tui_agent/: every import counts, type-only ones too.

The graph is read from the source with `ast`, not from what Python happens to load:
module-level imports, imports inside functions and methods, and imports under
`if TYPE_CHECKING:` are all edges. A circle is a strongly connected component of
more than one module; the test names each one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from repo_paths import ROOT

PACKAGE = "tui_agent"


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module under the package, by dotted name (a package by its own name)."""
    files: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([target] if target else [])])


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that `name` is, or lives in (an attribute of a module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `module` imports anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                hit = _known(alias.name, modules)
                if hit:
                    found.add(hit)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, is_package, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                # `from package import module` names a module; `from module import name` names the module.
                hit = _known(f"{base}.{alias.name}", modules) if alias.name != "*" else None
                hit = hit or _known(base, modules)
                if hit:
                    found.add(hit)
    found.discard(module)
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    modules = module_files(root, package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # A type-only import closes a circle as much as a run-time one.
        (
            {
                "pkg/__init__.py": "",
                "pkg/a.py": "from pkg import b\n",
                "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import Thing\n",
            },
            [["pkg.a", "pkg.b"]],
        ),
        # An import hidden inside a function is an edge too; relative imports resolve.
        (
            {
                "pkg/__init__.py": "",
                "pkg/sub/__init__.py": "",
                "pkg/sub/x.py": "def f():\n    from ..y import g\n    return g\n",
                "pkg/y.py": "from .sub import x\n",
            },
            [["pkg.sub.x", "pkg.y"]],
        ),
        # Three modules in a ring are one circle; a leaf they all import is not in it.
        (
            {
                "pkg/__init__.py": "",
                "pkg/leaf.py": "import os\n",
                "pkg/a.py": "import pkg.b\nfrom pkg import leaf\n",
                "pkg/b.py": "from pkg.c import thing\nfrom . import leaf\n",
                "pkg/c.py": "from .a import other\nfrom .leaf import x\n",
            },
            [["pkg.a", "pkg.b", "pkg.c"]],
        ),
        # A one-way chain has no circle.
        (
            {
                "pkg/__init__.py": "",
                "pkg/a.py": "from pkg.b import f\n",
                "pkg/b.py": "from . import c\n",
                "pkg/c.py": "",
            },
            [],
        ),
    ],
)
def test_the_walker_finds_each_kind_of_circle(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    _write(tmp_path, files)
    assert circles(import_graph(tmp_path, "pkg")) == expected


def test_the_walker_sees_the_real_package() -> None:
    graph = import_graph()
    # A module-level import, one inside a method, and a type-only one are all edges.
    assert "tui_agent.core.loop" in graph["tui_agent.ui.turn_runner"]
    assert "tui_agent.ui.turn_runner" in graph["tui_agent.ui.conversation_view"]  # inside ConversationView.run_turn
    assert "tui_agent.core.tools.registry" in graph["tui_agent.ui.app"]  # also under TYPE_CHECKING
    assert "tui_agent.ui.host" in graph["tui_agent.ui.turn_view"]  # only under TYPE_CHECKING
    assert "tui_agent" in graph and "tui_agent.ui.widgets" in graph  # packages are modules too


def test_no_import_circle_in_tui_agent() -> None:
    found = circles(import_graph())
    assert not found, "import circles in tui_agent/ (each a group of modules that import each other):\n" + "\n".join(
        " <-> ".join(group) for group in found
    )
