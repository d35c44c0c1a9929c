"""Dependencies a packager would accept: every package the code imports is declared in
pyproject.toml (its imports walked, mapped to distributions with importlib.metadata), nothing
declared goes unused, and requirements.lock pins every dependency inside its declared range."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version
from repo_paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Top-level names of every absolute import in ``package`` (inside functions and TYPE_CHECKING
    blocks too) -> the files importing them; the standard library and the package itself left out."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != package.name:
                    found.setdefault(top, set()).add(str(path.relative_to(package.parent)))
    return found


def undeclared(package: Path, declared: set[str]) -> dict[str, str]:
    """Imported modules whose distribution is not declared: module -> what is missing."""
    owners = metadata.packages_distributions()
    missing = {}
    for module, files in imported_modules(package).items():
        distributions = {normal(d) for d in owners.get(module, [])}
        if not distributions:
            missing[module] = f"no installed distribution provides it (imported by {sorted(files)[0]})"
        elif not distributions & declared:
            missing[module] = f"from {sorted(distributions)}, not declared (imported by {sorted(files)[0]})"
    return missing


def requirements(*groups: str) -> dict[str, Requirement]:
    lines = list(PYPROJECT["project"]["dependencies"])
    for group in groups:
        lines += PYPROJECT["project"]["optional-dependencies"][group]
    return {normal(r.name): r for r in map(Requirement, lines)}


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: not an exact pin: {line!r}"
            pins[normal(name)] = Version(version)
    return pins


def test_every_imported_package_is_declared():
    declared = set(requirements())
    assert undeclared(ROOT / "tui_agent", declared) == {}


def test_every_declared_package_is_imported():
    owners = metadata.packages_distributions()
    used = {normal(d) for module in imported_modules(ROOT / "tui_agent") for d in owners.get(module, [])}
    assert set(requirements()) - used == set()


def test_an_undeclared_import_is_caught(tmp_path):
    """The walker itself: an import in a function, a from-import, a relative and a stdlib import."""
    package = tmp_path / "plugin_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import json\nfrom . import sibling\nfrom plugin_pkg import x\n"
        "def later():\n    import yarl\n    from rich.text import Text\n    import not_installed_anywhere\n"
    )
    assert undeclared(package, {"rich"}) == {
        "yarl": "from ['yarl'], not declared (imported by plugin_pkg/__init__.py)",
        "not_installed_anywhere": "no installed distribution provides it (imported by plugin_pkg/__init__.py)",
    }


def test_no_exact_pins_in_pyproject():
    for name, requirement in requirements("test", "dev", "docs").items():
        assert not any(spec.operator in ("==", "===") for spec in requirement.specifier), name
        assert requirement.specifier, f"{name}: no range at all"


def test_the_lock_pins_every_dependency_inside_its_range():
    pins = locked()
    for name, requirement in requirements("test", "dev", "docs").items():
        assert name in pins, f"{name} is not pinned in requirements.lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside {requirement.specifier}"
        )
    assert "tui-agent" not in pins and "httpx" not in pins  # the app itself; one HTTP stack (httpx2)
