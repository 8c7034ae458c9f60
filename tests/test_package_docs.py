"""Every package of gpusched says what it is for in its ``__init__`` docstring: at least two
sentences once pointers to ``docs/`` are taken out, so a newcomer who opens a package learns its
job and its main modules there (style.md convention 7), not "see docs/design.md" alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gpusched"
MIN_SENTENCES = 2
POINTER = re.compile(r"\(\s*see\s+(?:``)?docs/[^\s)`]*(?:``)?\s*\)|\bsee\s+(?:``)?docs/[^\s)`]*(?:``)?",
                     re.IGNORECASE)   # "(see docs/x.md)" or "see docs/x.md"
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def problem(doc: str | None) -> str:
    """What is wrong with a package docstring ("" when nothing)."""
    text = POINTER.sub("", doc or "")
    if not text.strip():
        return "no docstring" if not (doc or "").strip() else "only pointers to docs/"
    sentences = [part for part in SENTENCE_END.split(text) if re.search(r"[A-Za-z]{2}", part)]
    if len(sentences) < MIN_SENTENCES:
        return (f"{len(sentences)} sentence(s) besides pointers to docs/ (at least {MIN_SENTENCES}: "
                "what the package is for, its main modules)")
    return ""


def _packages() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("__init__.py") if "__pycache__" not in path.parts)


@pytest.mark.parametrize("init", _packages(), ids=lambda p: str(p.parent.relative_to(PACKAGE.parent)))
def test_every_package_says_what_it_is_for(init: Path) -> None:
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert problem(doc) == "", f"{init.parent.relative_to(PACKAGE.parent)}: {problem(doc)}"


@pytest.mark.parametrize("doc,expected", [
    pytest.param(None, "no docstring", id="missing"),
    pytest.param("  ", "no docstring", id="blank"),
    pytest.param("gpusched.cli: see docs/design.md.", "1 sentence", id="pointer-only"),
    pytest.param("gpusched.cli: see ``docs/design.md``.", "1 sentence", id="pointer-only-literal"),
    pytest.param("See docs/design.md. See docs/cli.md.", "only pointers", id="two-pointers"),
    pytest.param("The command line.", "1 sentence", id="one-sentence"),
    pytest.param("The command line (see docs/cli.md). Its verbs live in ``commands``.", "",
                 id="two-sentences-and-a-pointer"),
    pytest.param("The web page: ``routes`` serves it, ``summary`` adds it up.", "1 sentence",
                 id="a-colon-does-not-end-a-sentence"),
    pytest.param("Uses e.g. ``objects.pod`` and ``x.y``. Second one!", "", id="dotted-names"),
])
def test_the_check_finds_each_kind_of_offender(doc: str | None, expected: str) -> None:
    found = problem(doc)
    assert found.startswith(expected) and bool(found) == bool(expected)
