"""No import cycles in gpusched, counting function-level imports too.

A function-level import that exists only to dodge a cycle hides a circle the layers contract
(``.importlinter``) cannot see inside one package, so the graph here has an edge for every
``import``/``from ... import`` anywhere in a module. Importing ``a.b.c`` also runs ``a/__init__``
and ``a/b/__init__``, so those packages are edges too (except a module's own packages, which
are always initialised before it). Imports under ``if TYPE_CHECKING:`` never run and do not
count. Any strongly connected component of more than one module
is a cycle; the message names its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def module_files(root: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` loads: itself, or for ``pkg.mod.attr`` the longest module prefix."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but the bodies of ``if TYPE_CHECKING:`` (never imported at run time)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and _type_checking(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imported_names(module: str, path: Path) -> set[str]:
    names: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join(anchor + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    modules = module_files(root, package)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for name in _imported_names(module, path):
            target = _resolve(name, modules)
            if target is None:
                continue
            parts = target.split(".")
            for depth in range(1, len(parts) + 1):     # the target and the packages above it
                step = ".".join(parts[:depth])
                if step in modules and step != module and not module.startswith(step + "."):
                    edges.add(step)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("files, expected", [
    ({"p/__init__.py": "", "p/a.py": "from p.b import x\n", "p/b.py": "x = 1\n"}, []),
    ({"p/__init__.py": "", "p/a.py": "from p.b import x\n",
      "p/b.py": "def f():\n    from p.a import y\n"}, [["p.a", "p.b"]]),
    ({"p/__init__.py": "from p import a\n", "p/a.py": "X = 1\n",
      "p/q/__init__.py": "", "p/q/c.py": "import p.a\n"}, []),
    # p/s/__init__ is a registry importing p.s.a, which needs p.t, which needs one helper of p.s:
    # importing p.t first runs p/s/__init__ -> p.s.a -> p.t half-initialised.
    ({"p/__init__.py": "", "p/s/__init__.py": "from p.s import a\n", "p/s/a.py": "import p.t\n",
      "p/s/helper.py": "X = 1\n", "p/t.py": "def f():\n    from p.s.helper import X\n"},
     [["p.s", "p.s.a", "p.t"]]),
    ({"p/__init__.py": "", "p/a.py": "from . import b\n", "p/b.py": "from .a import f\n"},
     [["p.a", "p.b"]]),
    ({"p/__init__.py": "", "p/a.py": "from p.b import x\n",
      "p/b.py": "from typing import TYPE_CHECKING\nx = 1\nif TYPE_CHECKING:\n    from p.a import y\n"},
     []),
], ids=["no-cycle", "function-level-cycle", "own-package-init-is-no-cycle",
        "package-init-cycle", "relative-import-cycle", "type-checking-import-is-no-cycle"])
def test_cycle_detector(tmp_path: Path, files: dict[str, str],
                        expected: list[list[str]]) -> None:
    write_package(tmp_path, files)
    assert cycles(import_graph(tmp_path, "p")) == expected


def test_gpusched_has_no_import_cycles() -> None:
    found = cycles(import_graph(REPO_ROOT, "gpusched"))
    assert found == [], "import cycles (move the shared piece where both can import it): " + \
        "; ".join(" <-> ".join(c) for c in found)
