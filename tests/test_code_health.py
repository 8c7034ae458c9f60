"""The code-health bounds of docs/style.md, checked on the whole package.

- no module over 500 lines;
- no function over 60 lines or with a cyclomatic complexity over 15 (radon's measure), unless the
  function says why in one line, a ``# complexity: <reason>`` comment between its ``def`` and the
  end of its first statement (usually the docstring);
- ``vulture --min-confidence 80`` finds no dead code.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from radon.complexity import cc_visit
from tests.conftest import run_process

PACKAGE = Path(__file__).resolve().parent.parent / "gpusched"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 15
REASON = "# complexity:"


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _reasoned(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0]
    end = first.end_lineno or first.lineno
    return any(REASON in line for line in lines[node.lineno - 1:end])


def _functions(tree: ast.Module) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.lineno: n for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _offenders(path: Path) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    name = path.relative_to(PACKAGE.parent)
    found = []
    if len(lines) > MAX_MODULE_LINES:
        found.append(f"{name}: {len(lines)} lines (at most {MAX_MODULE_LINES})")
    functions = _functions(ast.parse(text))
    for lineno, node in functions.items():
        length = (node.end_lineno or lineno) - lineno + 1
        if length > MAX_FUNCTION_LINES and not _reasoned(lines, node):
            found.append(f"{name}:{lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
    for block in cc_visit(text):
        for item in [block, *getattr(block, "methods", [])]:
            node = functions.get(item.lineno)
            if node is None or item.complexity <= MAX_COMPLEXITY or _reasoned(lines, node):
                continue
            found.append(f"{name}:{item.lineno} {item.name}: complexity {item.complexity} "
                         f"(at most {MAX_COMPLEXITY})")
    return sorted(set(found))


def test_no_module_function_or_complexity_over_the_bounds() -> None:
    found = [line for path in _sources() for line in _offenders(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source,expected", [
    pytest.param("def f():\n" + "    x = 1\n" * 61, ["62 lines"], id="long-function"),
    pytest.param("def f():\n    # complexity: a flat table\n" + "    x = 1\n" * 61, [],
                 id="long-function-with-reason"),
    pytest.param("def f(a):\n" + "".join(f"    if a == {i}:\n        return {i}\n" for i in range(16)),
                 ["complexity 17"], id="complex-function"),
    pytest.param("x = 1\n" * 501, ["501 lines"], id="long-module"),
])
def test_the_check_finds_each_kind_of_offender(tmp_path: Path, source: str, expected: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    path = tmp_path / "m.py"
    path.write_text(source)
    found = _offenders(path)
    assert len(found) == len(expected)
    for line, fragment in zip(found, expected):
        assert fragment in line


def test_vulture_finds_no_dead_code() -> None:
    out = run_process([sys.executable, "-m", "vulture", "--min-confidence", "80", str(PACKAGE)])
    assert out.returncode == 0, out.stdout + out.stderr
