"""The shape of the house: dependencies point one way, and no package's modules import in a circle.

Imports are read from the source (``if TYPE_CHECKING:`` blocks and function bodies included),
so a cycle hidden from the interpreter still fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "lifecycle", "gateway", "platforms")
MAY_IMPORT = {
    "agent": set(),
    "lifecycle": {"agent"},
    "platforms": set(),
    "gateway": {"agent", "lifecycle", "platforms"},
}


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str) -> set[str]:
    """Every module named by an import statement anywhere in the file, resolved to a full name."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_downwards(package):
    allowed = MAY_IMPORT[package] | {package}
    for name, path in modules(package).items():
        if name.startswith("platforms.fakes"):
            continue  # the fakes are test doubles; they may use anything
        upward = {m.split(".")[0] for m in imports(path, name)} & set(PACKAGES) - allowed
        assert not upward, f"{name} imports {sorted(upward)}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package):
    known = modules(package)
    graph = {name: {m for m in imports(path, name) if m in known and m != name} for name, path in known.items()}
    # A package's __init__ re-exporting its modules is not a cycle: only module-to-module edges count.
    graph = {name: {m for m in deps if known[m].name != "__init__.py" or m == package} for name, deps in graph.items()}
    for name in graph:
        graph[name].discard(package)
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        assert node not in visiting, f"import cycle: {' -> '.join([*visiting[visiting.index(node):], node])}"
        visiting.append(node)
        for dep in sorted(graph[node]):
            visit(dep)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)


def test_the_readme_maps_every_module_of_the_gateway():
    # The README's table "Inside gateway/" is where a newcomer looks for a concern's module.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("Inside `gateway/`"):]
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", table))
    store = {f"{path.name}" for path in (ROOT / "gateway" / "store").glob("*.py")}
    gateway = {path.name + ("/" if path.is_dir() else "") for path in (ROOT / "gateway").iterdir()
               if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists())}
    missing = sorted((gateway | store) - named - {"__init__.py", "config/"})  # config/: the row above the table
    assert missing == [], f"README.md's table of gateway/ does not name {missing}"
